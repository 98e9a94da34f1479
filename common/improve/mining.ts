import type { CheckKind, RunRecord } from '../run-record';
import type { FailureGroup } from './types';

/** Longest normalized reason kept; the rest is cut. */
const MAX_REASON = 120;

/**
 * Verdict kinds whose failures say something about the harness. `human` is not one: a person's
 * rejection is a judgement on the run, not a repeatable harness failure. (`output`, a worker that
 * ended without a final answer, is left out as well, as the improvement brief lists it.)
 */
const MINED_KINDS: ReadonlySet<CheckKind> = new Set<CheckKind>([
  'judge',
  'command',
  'schema',
  'diff',
  'citations',
  'tests',
]);

/**
 * A failure reason with what varies between occurrences taken out, so the same failure in
 * different runs gets the same text: lower-cased; quoted text ('…', "…", `…`) → `"…"`; file
 * paths (with a `/`, and `file.ext:line`) → `PATH`; hex hashes of 7 or more characters with a
 * digit and a letter → `HASH`; other numbers → `N`; whitespace collapsed; cut to 120 characters.
 *
 * "misses: mentions a crash (attempt 2, 3 lines)" and "misses: mentions a crash (attempt 1, 5 lines)"
 * both become "misses: mentions a crash (attempt N, N lines)".
 */
export function normalizeReason(reason: string): string {
  return (
    reason
      .toLowerCase()
      // Quotes that open after a letter or digit are apostrophes ("doesn't"), not quotes.
      .replace(/(?<![\p{L}\p{N}])(['"`])[^\n]*?\1(?![\p{L}\p{N}])/gu, '"…"')
      .replace(/(?:[a-z]+:\/\/)?[\w.~@+-]*\/(?:[^\s"'`(),;]*[^\s"'`(),;.:])?/g, (path) =>
        looksLikePath(path) ? 'PATH' : path,
      )
      .replace(/[\w.-]+\.[a-z][a-z0-9]*:\d+(?::\d+)?/g, 'PATH')
      .replace(/(?<![0-9a-z])(?=[a-f]*[0-9])(?=[0-9]*[a-f])[0-9a-f]{7,}(?![0-9a-z])/g, 'HASH')
      .replace(/\d+(?:[.,]\d+)*/g, 'N')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, MAX_REASON)
      .trimEnd()
  );
}

/**
 * A token with a `/` is a path when it is rooted (`/`, `./`, `../`, `~/`, a URL), has two or more
 * slashes, or ends in a file extension; `and/or` or `input/output` stay words.
 */
function looksLikePath(token: string): boolean {
  if (/^(?:\/|\.{1,2}\/|~\/|[a-z]+:\/\/)/.test(token)) return true;
  if ((token.match(/\//g) ?? []).length >= 2) return true;
  return /\.[a-z][a-z0-9]*(?::\d+){0,2}$/.test(token);
}

export interface MineResult {
  /** Groups seen in at least `minOccurrences` distinct runs, most widespread first. */
  groups: FailureGroup[];
  /** Records mined. */
  considered: number;
  /** Workflow ids of records left out (evaluation runs). */
  skipped: string[];
}

/**
 * Groups the failing verdicts of past runs into repeated failures, the improvement loop's input.
 *
 * Every failing verdict of a mined kind (judge, command, schema, diff, citations; never human)
 * in every attempt gives one occurrence per failed rubric item, or one with no item when it names
 * none. The grouping key:
 * - with an item: `<check>|<item>|` — a judge words the same failed item differently each time,
 *   so the item alone identifies the failure; the group's `reason` is the normalized reason of
 *   its first occurrence and `examples` show how it was worded;
 * - without one: `<check>|-|<normalized reason>`.
 *
 * A group is kept when it occurred in at least `minOccurrences` DISTINCT runs: one bad run never
 * leads to a proposal, however many attempts it failed. Sorted by distinct runs, then
 * occurrences (both descending), then key. Evaluation runs (`evaluation: true`) are skipped:
 * the improvement loop must not learn from its own experiments.
 */
export function mineFailures(records: RunRecord[], opts: { minOccurrences: number }): MineResult {
  const groups = new Map<string, FailureGroup>();
  const skipped: string[] = [];
  let considered = 0;
  for (const record of records) {
    if ((record as { evaluation?: boolean }).evaluation === true) {
      skipped.push(record.workflowId);
      continue;
    }
    considered++;
    for (const attempt of record.attempts) {
      for (const verdict of attempt.verdicts) {
        if (verdict.passed !== false || !MINED_KINDS.has(verdict.kind)) continue;
        const normalized = normalizeReason(verdict.reason);
        const items: Array<string | null> = verdict.failedItems.length > 0 ? [...new Set(verdict.failedItems)] : [null];
        for (const item of items) {
          const key = item === null ? `${verdict.check}|-|${normalized}` : `${verdict.check}|${item}|`;
          let group = groups.get(key);
          if (!group) {
            group = { key, check: verdict.check, item, reason: normalized, runs: [], occurrences: 0, examples: [] };
            groups.set(key, group);
          }
          group.occurrences++;
          if (!group.runs.includes(record.workflowId)) group.runs.push(record.workflowId);
          if (group.examples.length < 3 && !group.examples.includes(verdict.reason))
            group.examples.push(verdict.reason);
        }
      }
    }
  }
  const kept = [...groups.values()]
    .filter((g) => g.runs.length >= opts.minOccurrences)
    .sort(
      (a, b) =>
        b.runs.length - a.runs.length || b.occurrences - a.occurrences || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    );
  return { groups: kept, considered, skipped };
}
