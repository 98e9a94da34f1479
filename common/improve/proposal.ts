import type { Harness, Proposal } from './types';

/**
 * The paths a proposal may change, and nothing else:
 * - `systemPrompt`: the worker's system prompt (a non-empty text; it cannot be removed);
 * - `knowledge.<name>`: a knowledge document (name of letters, digits, `-`, `_`, `.`); `null` removes it;
 * - `toolDescriptions.<tool>`: the description of a tool the loop has (one the harness already
 *   describes or one of the loop's tools); `null` removes it, restoring the built-in one.
 * The rubric, checks, budgets, autonomy, the loop's tools and the improvement loop are outside.
 */
export const IMPROVABLE_PATHS = ['systemPrompt', 'knowledge.<name>', 'toolDescriptions.<tool>'] as const;

/** Longest value a change may carry. */
export const MAX_CHANGE_CHARS = 50_000;

const KNOWLEDGE_NAME = /^[A-Za-z0-9._-]+$/;

export type ProposalCheck =
  { ok: true; harness: Harness; changed: string[] } | { ok: false; refusal: string; outside: string[] };

/**
 * Checks a proposal against the improvable surface before anything is evaluated, and applies it.
 * Refused: any path outside the surface (all listed in `outside`), a description of a tool the
 * loop does not have (also listed), a path given twice, an empty or removed system prompt, a value
 * over 50,000 characters, or changes that leave the harness as it was. On success, returns a new
 * harness (`current` is not touched) and the paths whose value actually changed.
 */
export function checkProposal(proposal: Proposal, current: Harness, tools: string[]): ProposalCheck {
  const paths = proposal.changes.map((c) => c.path);
  const outside = paths.filter((p) => !onSurface(p));
  if (outside.length > 0) {
    return refuse(
      `the proposal changes ${outside.join(', ')}, which ${outside.length === 1 ? 'is' : 'are'} outside the improvable surface (${IMPROVABLE_PATHS.join(', ')}): refused before evaluation`,
      outside,
    );
  }
  const known = new Set([...Object.keys(current.toolDescriptions), ...tools]);
  const strangers = paths.filter(
    (p) => p.startsWith('toolDescriptions.') && !known.has(p.slice('toolDescriptions.'.length)),
  );
  if (strangers.length > 0) {
    const names = strangers.map((p) => p.slice('toolDescriptions.'.length));
    return refuse(
      `the proposal describes ${names.join(', ')}, which the loop does not have (its tools: ${[...known].join(', ') || 'none'}): refused before evaluation`,
      strangers,
    );
  }
  const duplicates = [...new Set(paths.filter((p, i) => paths.indexOf(p) !== i))];
  if (duplicates.length > 0)
    return refuse(`the proposal changes ${duplicates.join(', ')} more than once: refused before evaluation`, []);
  for (const change of proposal.changes) {
    if (change.value !== null && change.value.length > MAX_CHANGE_CHARS) {
      return refuse(
        `the proposal's ${change.path} has ${change.value.length} characters, over the limit of ${MAX_CHANGE_CHARS}: refused before evaluation`,
        [],
      );
    }
    if (change.path === 'systemPrompt' && !change.value?.trim()) {
      return refuse(
        'the proposal empties or removes systemPrompt, which must stay a non-empty text: refused before evaluation',
        [],
      );
    }
    if (change.path.startsWith('toolDescriptions.') && change.value !== null && !change.value.trim()) {
      return refuse(
        `the proposal sets ${change.path} to an empty text (use null to restore the built-in description): refused before evaluation`,
        [],
      );
    }
  }
  const harness = applyChanges(proposal, current);
  const changed = paths.filter((p) => valueAt(current, p) !== valueAt(harness, p));
  if (changed.length === 0) return refuse('the proposal leaves the harness as it is: nothing to evaluate', []);
  return { ok: true, harness, changed };
}

function refuse(refusal: string, outside: string[]): ProposalCheck {
  return { ok: false, refusal, outside };
}

function onSurface(path: string): boolean {
  if (path === 'systemPrompt') return true;
  if (path.startsWith('knowledge.')) return KNOWLEDGE_NAME.test(path.slice('knowledge.'.length));
  return path.startsWith('toolDescriptions.') && path.length > 'toolDescriptions.'.length;
}

function applyChanges(proposal: Proposal, current: Harness): Harness {
  // Maps, not object literals, so a name like `__proto__` stays an ordinary key.
  const knowledge = new Map(Object.entries(current.knowledge));
  const toolDescriptions = new Map(Object.entries(current.toolDescriptions));
  let systemPrompt = current.systemPrompt;
  for (const { path, value } of proposal.changes) {
    if (path === 'systemPrompt') systemPrompt = value ?? systemPrompt;
    const [field, ...rest] = path.split('.');
    const target = field === 'knowledge' ? knowledge : field === 'toolDescriptions' ? toolDescriptions : null;
    if (!target) continue;
    if (value === null) target.delete(rest.join('.'));
    else target.set(rest.join('.'), value);
  }
  return {
    systemPrompt,
    knowledge: Object.fromEntries(knowledge),
    toolDescriptions: Object.fromEntries(toolDescriptions),
  };
}

/** The text at a path of a harness, or undefined when there is none. */
function valueAt(h: Harness, path: string): string | undefined {
  if (path === 'systemPrompt') return h.systemPrompt;
  const [field, ...rest] = path.split('.');
  const record: Record<string, string> | undefined =
    field === 'knowledge' ? h.knowledge : field === 'toolDescriptions' ? h.toolDescriptions : undefined;
  const key = rest.join('.');
  return record && Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

/** Names in a stable order that does not depend on the locale. */
function sortedKeys(record: Record<string, string>): string[] {
  return Object.keys(record).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The system prompt a run gets: the harness's, then each knowledge document in name order. */
export function harnessPrompt(h: Harness): string {
  return (
    h.systemPrompt +
    sortedKeys(h.knowledge)
      .map((name) => `\n\n## Knowledge: ${name}\n\n${h.knowledge[name]}`)
      .join('')
  );
}

/**
 * A readable line diff of two harnesses (`loopwright harness diff`): for each path that differs,
 * `@@ <path> @@` then its lines as `- removed`, `+ added`, `  kept`. Paths present on one side
 * only show all their lines removed or added. Paths in order: systemPrompt, knowledge, toolDescriptions.
 */
export function diffHarness(a: Harness, b: Harness): string[] {
  const paths = ['systemPrompt'];
  for (const field of ['knowledge', 'toolDescriptions'] as const) {
    const names = new Set([...sortedKeys(a[field]), ...sortedKeys(b[field])]);
    paths.push(...[...names].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).map((n) => `${field}.${n}`));
  }
  const out: string[] = [];
  for (const path of paths) {
    const before = valueAt(a, path);
    const after = valueAt(b, path);
    if (before === after) continue;
    out.push(
      `@@ ${path} @@`,
      ...lineDiff(before === undefined ? [] : before.split('\n'), after === undefined ? [] : after.split('\n')),
    );
  }
  return out;
}

/** A longest-common-subsequence line diff; O(n·m), fine for prompts and documents. */
function lineDiff(a: string[], b: string[]): string[] {
  // lcs(i, j): length of the LCS of a[i..] and b[j..], one row of b.length + 1 per line of a (and one past the end).
  const width = b.length + 1;
  const table = new Array<number>((a.length + 1) * width).fill(0);
  const lcs = (i: number, j: number): number => table[i * width + j] ?? 0;
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] = a[i] === b[j] ? lcs(i + 1, j + 1) + 1 : Math.max(lcs(i + 1, j), lcs(i, j + 1));
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(`  ${a[i++]}`.trimEnd());
      j++;
    } else if (i < a.length && (j === b.length || lcs(i + 1, j) >= lcs(i, j + 1))) {
      out.push(`- ${a[i++]}`.trimEnd());
    } else {
      out.push(`+ ${b[j++]}`.trimEnd());
    }
  }
  return out;
}
