import { z } from 'zod';
import type { Autonomy } from './loop-spec';
import type { RunRecord } from './run-record';

/** A loop's promotion rule: `consecutive` runs at the level below `to`, newest first, each with outcome `of`. */
export const PromotionRuleSchema = z.strictObject({
  to: z.enum(['L2', 'L3']),
  consecutive: z.number().int().min(1),
  of: z.enum(['approved_unchanged', 'audited_ok', 'passed']),
});
export type PromotionRule = z.infer<typeof PromotionRuleSchema>;

/**
 * What one closed run says about its loop's autonomy. Exactly one applies, tried in this order:
 * - `rejected`: state `rejected` (a person rejected the run, whatever it produced);
 * - `audited_bad`: `audit.verdict` is `bad` (a person found an applied or sampled run wrong);
 * - `overridden`: completed with `override: true` (a person accepted a candidate that failed its
 *   checks), or completed after an applied `retry` (a person's guidance steered the candidate
 *   that passed): either way the loop did not get there on its own;
 * - `approved_unchanged`: completed, stopReason `passed`, no override, an applied `approve` and
 *   no applied `retry` or `extend`: a person approved the verified change (L2) or the candidate
 *   under human review as it was, within the budgets the spec declared;
 * - `unverified`: what would be `approved_unchanged` or `audited_ok`, but the approval or the
 *   audit was not a signed, verified decision (anyone can claim a name): it never counts as evidence;
 * - `audited_ok`: `audit.verdict` is `ok` (L3 runs, audit samples): wins over `passed`;
 * - `passed`: completed, stopReason `passed`, no override, no applied retry, and none of the
 *   above: the checks passed with no approval involved (L1, L3), or approved after an applied
 *   `extend` (more budget than the spec declared);
 * - `other`: anything else (blocked, budget_exhausted, failed, canceled).
 * Refused decisions never count.
 */
export const OUTCOMES = [
  'approved_unchanged',
  'passed',
  'audited_ok',
  'overridden',
  'rejected',
  'audited_bad',
  'unverified',
  'other',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The evidence for (or against) raising a loop's autonomy, from its closed runs at one level. */
export interface Evidence {
  level: Autonomy;
  /** Runs counted: closed, at `level`, not evaluation runs. */
  runs: number;
  counts: Record<Outcome, number>;
  /** Consecutive runs, newest first, that qualify for `rule.of` (0 without a rule). */
  streak: number;
  /** The newest run that does not qualify, when there is one. */
  brokenBy: { workflowId: string; outcome: Outcome } | null;
  rule: PromotionRule | null;
  meets: boolean;
  /** One line that says whether the loop meets its rule, and why. */
  verdict: string;
}

/** The outcome of one closed run; see {@link OUTCOMES} for the rules. */
export function classifyRun(record: RunRecord): Outcome {
  const appliedOf = (kind: string) => record.decisions.filter((d) => d.kind === kind && d.status === 'applied');
  const applied = (kind: string) => appliedOf(kind).length > 0;
  const verified = (kind: string) => appliedOf(kind).some((d) => d.status === 'applied' && d.verified === true);
  const completed = record.state === 'completed';
  if (record.state === 'rejected') return 'rejected';
  if (record.audit?.verdict === 'bad') return 'audited_bad';
  if (completed && (record.override || applied('retry'))) return 'overridden';
  const passed = completed && record.stopReason === 'passed';
  if (passed && applied('approve') && !applied('extend'))
    return verified('approve') ? 'approved_unchanged' : 'unverified';
  if (record.audit?.verdict === 'ok') return verified('audit') ? 'audited_ok' : 'unverified';
  if (passed) return 'passed';
  return 'other';
}

/** Which outcomes count toward a streak for a rule of `of`. */
const QUALIFIES: Record<PromotionRule['of'], readonly Outcome[]> = {
  passed: ['passed', 'approved_unchanged', 'audited_ok'],
  audited_ok: ['audited_ok'],
  approved_unchanged: ['approved_unchanged'],
};

const RANK: Record<Autonomy, number> = { L1: 1, L2: 2, L3: 3 };

/** `50 consecutive L2 runs approved unchanged` */
export function describeRule(rule: PromotionRule, level: Autonomy): string {
  const what = { approved_unchanged: 'approved unchanged', audited_ok: 'audited ok', passed: 'passed' }[rule.of];
  return `${rule.consecutive} consecutive ${level} run${rule.consecutive === 1 ? '' : 's'} ${what}`;
}

/**
 * Counts the outcomes of a loop's closed runs at `level` (others, and evaluation runs, are
 * ignored; any order), newest first by `endedAt` (else `startedAt`), and says whether the
 * newest `rule.consecutive` of them all qualify. It only reports: it never changes a level.
 */
export function promotionEvidence(records: RunRecord[], level: Autonomy, rule?: PromotionRule): Evidence {
  const time = (r: RunRecord) => r.endedAt ?? r.startedAt;
  const runs = records
    .filter((r) => r.autonomy === level && (r as { evaluation?: boolean }).evaluation !== true)
    .sort((a, b) => time(b).localeCompare(time(a)) || b.workflowId.localeCompare(a.workflowId));
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const outcomes = runs.map((r) => classifyRun(r));
  for (const o of outcomes) counts[o] += 1;
  const base = { level, runs: runs.length, counts };
  if (!rule)
    return { ...base, streak: 0, brokenBy: null, rule: null, meets: false, verdict: 'no promotion rule declared' };

  const broken = outcomes.findIndex((o) => !QUALIFIES[rule.of].includes(o));
  const streak = broken === -1 ? outcomes.length : broken;
  const brokenRun = runs[broken]; // undefined when none broke the streak (broken is -1)
  const brokenOutcome = outcomes[broken];
  const brokenBy = brokenRun && brokenOutcome ? { workflowId: brokenRun.workflowId, outcome: brokenOutcome } : null;
  const text = describeRule(rule, level);
  if (RANK[rule.to] <= RANK[level]) {
    return {
      ...base,
      streak,
      brokenBy,
      rule,
      meets: false,
      verdict: `does not apply: the rule raises autonomy to ${rule.to} and these runs are ${level} already`,
    };
  }
  const meets = streak >= rule.consecutive;
  const why = brokenBy
    ? `broken by run ${brokenBy.workflowId} ${brokenBy.outcome.replace('_', ' ')}`
    : `${rule.consecutive - streak} more needed`;
  const verdict = meets
    ? `meets its rule: ${text} (streak ${streak}) — an operator may grant ${rule.to} (loopwright grant)`
    : `does not meet its rule: ${text} (streak ${streak}, ${why})`;
  return { ...base, streak, brokenBy, rule, meets, verdict };
}
