import { checkNumber, checkString, isRecord, unknownKeys, type Issues } from '../shape-check';
import type { Proposal, ProposedChange } from './types';

/**
 * The improvement workflow's check of the proposer's answer: what `ProposalSchema`
 * (common/improve/types.ts) accepts, without zod (see shape-check.ts). Same accepted values, same
 * result; test/common/shape-check.property.test.ts holds it to the schema.
 */
export function readProposal(raw: unknown): { ok: true; proposal: Proposal } | { ok: false; issues: string[] } {
  const issues: Issues = [];
  const proposal = read(raw, issues);
  return proposal && issues.length === 0
    ? { ok: true, proposal }
    : { ok: false, issues: issues.length > 0 ? issues : ['(root): not a proposal'] };
}

const CONTRACT_KEYS = ['failingRuns', 'occurrences', 'rootCause', 'expectedImprovement', 'rollback'] as const;

function read(raw: unknown, issues: Issues): Proposal | undefined {
  if (!strict(raw, '', ['changes', 'contract'], issues)) return undefined;
  const changes: ProposedChange[] = [];
  if (!Array.isArray(raw.changes)) issues.push('changes: expected array');
  else {
    if (raw.changes.length < 1) issues.push('changes: too small: expected array to have >=1 items');
    raw.changes.forEach((c: unknown, i) => {
      const at = `changes.${i}`;
      if (!strict(c, at, ['path', 'value'], issues)) return;
      const path = checkString(c.path, `${at}.path`, { min: 1 }, issues);
      const value = c.value === null ? null : checkString(c.value, `${at}.value`, {}, issues);
      if (path !== undefined && value !== undefined) changes.push({ path, value });
    });
  }
  const c = raw.contract;
  if (!strict(c, 'contract', CONTRACT_KEYS, issues)) return undefined;
  const failingRuns: string[] = [];
  if (!Array.isArray(c.failingRuns)) issues.push('contract.failingRuns: expected array');
  else
    c.failingRuns.forEach((r: unknown, i) => {
      const run = checkString(r, `contract.failingRuns.${i}`, {}, issues);
      if (run !== undefined) failingRuns.push(run);
    });
  const occurrences = checkNumber(c.occurrences, 'contract.occurrences', { int: true, min: 0 }, issues);
  const text = (key: 'rootCause' | 'expectedImprovement' | 'rollback') =>
    checkString(c[key], `contract.${key}`, { min: 1 }, issues);
  const contract = {
    failingRuns,
    occurrences: occurrences!,
    rootCause: text('rootCause')!,
    expectedImprovement: text('expectedImprovement')!,
    rollback: text('rollback')!,
  };
  return issues.length === 0 ? { changes, contract } : undefined;
}

/** An object with no keys but `known` (zod's strictObject). */
function strict(
  value: unknown,
  path: string,
  known: readonly string[],
  issues: Issues,
): value is Record<string, unknown> {
  if (!isRecord(value)) {
    issues.push(`${path || '(root)'}: expected object`);
    return false;
  }
  const extra = unknownKeys(value, known);
  if (extra.length > 0)
    issues.push(
      `${path || '(root)'}: Unrecognized key${extra.length > 1 ? 's' : ''}: ${extra.map((k) => `"${k}"`).join(', ')}`,
    );
  return true;
}
