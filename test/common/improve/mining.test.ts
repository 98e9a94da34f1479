import fc from 'fast-check';
import { mineFailures, normalizeReason } from '../../../common/improve/mining';
import type { AttemptRecord, CheckKind, RunRecord, Verdict } from '../../../common/run-record';
import { ZERO_USAGE } from '../../../common/usage';

const verdict = (
  check: string,
  kind: CheckKind,
  reason: string,
  failedItems: string[] = [],
  passed = false,
): Verdict => ({
  check,
  kind,
  passed,
  reason,
  failedItems,
  requiredCorrection: '',
  usage: ZERO_USAGE,
});
const attempt = (n: number, verdicts: Verdict[]): AttemptRecord => ({
  n,
  candidate: 'x',
  passed: verdicts.every((v) => v.passed),
  reasons: [],
  verdicts,
  usage: ZERO_USAGE,
});
/** Only the fields mining reads; the rest of a run record does not matter here. */
const record = (workflowId: string, attempts: AttemptRecord[], evaluation?: boolean): RunRecord =>
  ({ workflowId, attempts, ...(evaluation === undefined ? {} : { evaluation }) }) as unknown as RunRecord;

describe('normalizeReason', () => {
  test('merges reasons that differ only in their numbers', () => {
    expect(normalizeReason('misses: mentions a crash (attempt 2, 3 lines)')).toBe(
      'misses: mentions a crash (attempt N, N lines)',
    );
    expect(normalizeReason('misses: mentions a crash (attempt 1, 5 lines)')).toBe(
      normalizeReason('misses: mentions a crash (attempt 2, 3 lines)'),
    );
  });

  test('replaces paths, file:line, hashes and quoted text, keeps words with a slash', () => {
    expect(normalizeReason('Test failed at src/math/add.ts:12:3 and /tmp/run-42/out.log')).toBe(
      'test failed at PATH and PATH',
    );
    expect(normalizeReason('see add.ts:7.')).toBe('see PATH.');
    expect(normalizeReason('expected \'foo bar\' but got "baz" in `x()`')).toBe('expected "…" but got "…" in "…"');
    expect(normalizeReason("doesn't cite the input/output contract")).toBe("doesn't cite the input/output contract");
    expect(normalizeReason('commit 3f2a9c1d0e is not on the branch')).toBe('commit HASH is not on the branch');
    expect(normalizeReason('the word acceded has no digit')).toBe('the word acceded has no digit');
  });

  test('collapses whitespace and cuts to 120 characters', () => {
    expect(normalizeReason('  a \n\t b  ')).toBe('a b');
    expect(normalizeReason('x'.repeat(500))).toHaveLength(120);
  });

  test('property: never longer than 120, no digits left, and the same whatever the digits were', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 0, max: 9 }), (text, digit) => {
        const normalized = normalizeReason(text);
        expect(normalized.length).toBeLessThanOrEqual(120);
        expect(normalized).not.toMatch(/[0-9]/);
        expect(normalizeReason(text.replace(/[0-9]/g, String(digit)))).toBe(normalized);
      }),
    );
  });
});

describe('mineFailures', () => {
  test('a judge item failed in 3 runs, worded differently each time, makes one group', () => {
    const records = [
      record('fix/1', [
        attempt(1, [verdict('judge', 'judge', 'does not mention the crash in line 3', ['mentions the crash'])]),
      ]),
      record('fix/2', [attempt(1, [verdict('judge', 'judge', 'no word about the crash', ['mentions the crash'])])]),
      record('fix/3', [
        attempt(1, [verdict('judge', 'judge', 'crash missing', ['mentions the crash'])]),
        attempt(2, [verdict('judge', 'judge', 'still no crash', ['mentions the crash'])]),
      ]),
    ];
    const { groups, considered, skipped } = mineFailures(records, { minOccurrences: 3 });
    expect(considered).toBe(3);
    expect(skipped).toEqual([]);
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({
      key: 'judge|mentions the crash|',
      check: 'judge',
      item: 'mentions the crash',
      runs: ['fix/1', 'fix/2', 'fix/3'],
      occurrences: 4,
      reason: 'does not mention the crash in line N',
    });
    expect(groups[0]?.examples).toEqual([
      'does not mention the crash in line 3',
      'no word about the crash',
      'crash missing',
    ]);
  });

  test('one run failing 5 attempts the same way makes no group', () => {
    const attempts = [1, 2, 3, 4, 5].map((n) =>
      attempt(n, [verdict('tests', 'command', `exit code 1 after ${n}00 ms`)]),
    );
    const result = mineFailures([record('fix/1', attempts), record('fix/2', [])], { minOccurrences: 2 });
    expect(result.groups).toEqual([]);
    expect(mineFailures([record('fix/1', attempts)], { minOccurrences: 1 }).groups[0]).toMatchObject({
      key: 'tests|-|exit code N after N ms',
      runs: ['fix/1'],
      occurrences: 5,
    });
  });

  test('without a rubric item, reasons group by their normalized text and paths merge', () => {
    const records = ['a', 'b'].map((id, i) =>
      record(id, [attempt(1, [verdict('tests', 'command', `FAIL src/t${i}/add.test.ts:${i + 4}`)])]),
    );
    expect(mineFailures(records, { minOccurrences: 2 }).groups.map((g) => g.key)).toEqual(['tests|-|fail PATH']);
  });

  test('human verdicts, passing verdicts and evaluation runs are ignored', () => {
    const human = (id: string) =>
      record(id, [
        attempt(1, [verdict('review', 'human', 'not what I wanted'), verdict('judge', 'judge', 'fine', [], true)]),
      ]);
    const evalRun = (id: string) => record(id, [attempt(1, [verdict('judge', 'judge', 'bad', ['is short'])])], true);
    const result = mineFailures([human('h1'), human('h2'), evalRun('e1'), evalRun('e2')], { minOccurrences: 1 });
    expect(result.groups).toEqual([]);
    expect(result.considered).toBe(2);
    expect(result.skipped).toEqual(['e1', 'e2']);
  });

  test('each failed item is its own occurrence; groups sort by runs, then occurrences, then key', () => {
    const both = verdict('judge', 'judge', 'two misses', ['a', 'b']);
    const records = [
      record('r1', [attempt(1, [both]), attempt(2, [verdict('judge', 'judge', 'b again', ['b'])])]),
      record('r2', [attempt(1, [both])]),
      record('r3', [attempt(1, [verdict('judge', 'judge', 'only a', ['a'])])]),
    ];
    const { groups } = mineFailures(records, { minOccurrences: 2 });
    expect(groups.map((g) => [g.key, g.runs.length, g.occurrences])).toEqual([
      ['judge|a|', 3, 3],
      ['judge|b|', 2, 3],
    ]);
  });
});
