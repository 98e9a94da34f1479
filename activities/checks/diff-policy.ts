import { RE2JS } from 're2js';
import { ApplicationFailure } from '@temporalio/common';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { EVIDENCE_CHARS } from './command';
import { addedLines, diffTrees, listBlobs, readBlobs, resolveTrees, type Change } from './diff-policy/git';
import { compileAllowedPaths, DEFAULT_TEST_PATTERN } from './diff-policy/paths';
import { countTestCases, findSkipMarkers, type SkipMarker } from './diff-policy/test-cases';

export { DEFAULT_TEST_PATTERN } from './diff-policy/paths';

/** The standard rubric for code changes (see `runDiffPolicyCheck`). */
export interface DiffPolicyCheck {
  kind: 'diff';
  name: string;
  /** Path prefixes or globs (`src/`, `lib/**`, `test/math.test.js`); a change elsewhere fails. */
  allowedPaths: string[];
  /** At least one test case must be added. */
  requireRegressionTest: boolean;
  /** Regular expression source for test files; default `DEFAULT_TEST_PATTERN`. */
  testPattern?: string;
}

export interface DiffPolicyInput {
  check: DiffPolicyCheck;
  /** The git repository or worktree the run works in; paths are relative to it. */
  root: string;
  /** The commit the run's changes are compared with, e.g. the fork point of the run's branch. */
  baseRef: string;
}

/** Test files larger than this are not read (they are not hand-written tests). */
const MAX_TEST_FILE_BYTES = 4 * 1024 * 1024;
/** How many names a reason lists before it says "and N more". */
const MAX_NAMES = 10;

interface Failure {
  rule: 'allowed paths' | 'no deleted tests' | 'no skipped tests' | 'regression test';
  reason: string;
  correction: string;
}

/**
 * Checks a code change against the standard rubric, deterministically and without a model:
 * it compares `baseRef` with the working state of the workspace (HEAD plus staged, unstaged and
 * untracked files; ignored files do not count), staged into a temporary index so the
 * repository's own index is untouched. It fails, listing every broken rule in `failedItems`, when
 * - `allowed paths`: a changed, added, deleted or renamed path is outside `allowedPaths`;
 * - `no deleted tests`: a test file that had test cases is deleted (or renamed out of the test
 *   files), or a test file has fewer test cases than at base;
 * - `no skipped tests`: an added line in a test file adds a skip or focus marker (`.skip(`,
 *   `.only(`, `xit(`, `{ skip: true }`, `@pytest.mark.skip`, `t.Skip(` ...);
 * - `regression test`: `requireRegressionTest` is set and no test case was added (the total in
 *   test files did not go up and no new test file has a test case).
 * Test cases are `test(`/`it(` calls, `def test*(` and `func Test*(` outside comments and strings.
 * Costs no tokens. A workspace that is not a git repository, an unknown base or an invalid
 * `testPattern` is a non-retryable failure (`WorkspaceError`, `ConfigError`), not a verdict.
 */
export async function runDiffPolicyCheck(input: DiffPolicyInput): Promise<Verdict> {
  const { check, root } = input;
  const isTest = testMatcher(check);
  const isAllowed = compileAllowedPaths(check.allowedPaths);
  const { base, baseTree, workTree } = await resolveTrees(root, input.baseRef);
  const changes = await diffTrees(root, baseTree, workTree);

  const [baseTests, workTests] = await Promise.all([
    listBlobs(root, baseTree, isTest, MAX_TEST_FILE_BYTES),
    listBlobs(root, workTree, isTest, MAX_TEST_FILE_BYTES),
  ]);
  const texts = await readBlobs(root, [...baseTests.values(), ...workTests.values()]);
  // Files unchanged since base share a blob: each is read and counted once.
  const cache = new Map<string, number>();
  const countAll = (tests: Map<string, string>) =>
    new Map(
      [...tests].map(([file, oid]) => {
        const key = `${oid} ${file.endsWith('.py')}`;
        if (!cache.has(key)) cache.set(key, countTestCases(texts.get(oid) ?? '', file));
        return [file, cache.get(key) ?? 0] as const;
      }),
    );
  const baseCounts = countAll(baseTests);
  const workCounts = countAll(workTests);
  const count = (counts: Map<string, number>, file: string) => counts.get(file) ?? 0;
  const sum = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
  const before = sum(baseCounts);
  const after = sum(workCounts);

  const failures: Failure[] = [];
  const outside = [...new Set(changes.flatMap((c) => [c.oldPath, c.path]).filter((p): p is string => p !== undefined && !isAllowed(p)))];
  if (outside.length > 0) {
    const allowed = check.allowedPaths.join(', ');
    failures.push({
      rule: 'allowed paths',
      reason: `${plural(outside.length, 'changed path')} outside the allowed paths (${allowed}): ${names(outside)}`,
      correction: `revert your changes to ${names(outside)}: only ${allowed} may change`,
    });
  }

  const deleted: string[] = [];
  const fewer: string[] = [];
  for (const c of changes) {
    const oldPath = c.oldPath ?? c.path;
    const was = count(baseCounts, oldPath);
    if (was === 0) continue;
    if (c.status === 'D' || !isTest(c.path)) deleted.push(`${oldPath} (${plural(was, 'test case')})`);
    else if (count(workCounts, c.path) < was) fewer.push(`${c.path} (${was} → ${count(workCounts, c.path)} test cases)`);
  }
  if (deleted.length + fewer.length > 0) {
    const parts = [deleted.length > 0 ? `deleted test ${plural(deleted.length, 'file', false)} ${names(deleted)}` : '', fewer.length > 0 ? `removed test cases from ${names(fewer)}` : ''];
    const files = [...deleted, ...fewer].map((d) => d.replace(/ \(.*$/, ''));
    failures.push({
      rule: 'no deleted tests',
      reason: `the change ${parts.filter(Boolean).join(' and ')}`,
      correction: `restore the ${deleted.length > 0 ? 'deleted test' : 'removed test cases in'} ${names(files)} and fix the code instead`,
    });
  }

  const markers = await addedSkipMarkers(root, changes, workTests, texts);
  if (markers.length > 0) {
    const where = markers.map((m) => `${m.file}:${m.line} \`${m.marker}\``);
    failures.push({
      rule: 'no skipped tests',
      reason: `the change adds ${plural(markers.length, 'skip or focus marker')}: ${names(where)}`,
      correction: `remove the skip/focus markers at ${names(markers.map((m) => `${m.file}:${m.line}`))} and make the tests pass instead`,
    });
  }

  const newTestFile = changes.some((c) => c.status !== 'D' && count(baseCounts, c.oldPath ?? c.path) === 0 && !baseCounts.has(c.path) && count(workCounts, c.path) > 0);
  if (check.requireRegressionTest && after <= before && !newTestFile) {
    failures.push({
      rule: 'regression test',
      reason: `no test case was added (test cases ${before} → ${after}): a regression test is required`,
      correction: 'add a test that fails without your fix (a new test case in a test file)',
    });
  }

  const evidence = evidenceOf(base, changes, (c) => [count(baseCounts, c.oldPath ?? c.path), count(workCounts, c.path)], isTest, before, after);
  const summary = `${plural(changes.length, 'file')} changed since ${base.slice(0, 12)}, test cases ${before} → ${after}`;
  const passed = failures.length === 0;
  return {
    check: check.name,
    kind: 'diff',
    passed,
    reason: passed ? `the change keeps to the policy: ${summary}` : `${failures.map((f) => f.reason).join('; ')} (${summary})`,
    failedItems: failures.map((f) => f.rule),
    requiredCorrection: failures.map((f) => f.correction).join('; '),
    evidence,
    usage: { ...ZERO_USAGE },
  };
}

/** The loop's test-file pattern, in RE2 (linear time: the agent chooses the paths it is matched against). */
function testMatcher(check: DiffPolicyCheck): (file: string) => boolean {
  let re: RE2JS;
  try {
    re = RE2JS.compile(check.testPattern ?? DEFAULT_TEST_PATTERN);
  } catch (err) {
    throw ApplicationFailure.create({
      type: 'ConfigError',
      nonRetryable: true,
      message: `check ${check.name} has an invalid testPattern ${JSON.stringify(check.testPattern)}: ${(err as Error).message}; fix the loop spec`,
    });
  }
  return (file) => re.test(file);
}

/** Skip/focus markers on the lines the change adds to test files (every line of a new one). */
async function addedSkipMarkers(root: string, changes: Change[], workTests: Map<string, string>, texts: Map<string, string>): Promise<(SkipMarker & { file: string })[]> {
  const found: (SkipMarker & { file: string })[] = [];
  for (const c of changes) {
    const oid = workTests.get(c.path);
    const text = oid === undefined ? undefined : texts.get(oid);
    if (c.status === 'D' || oid === undefined || text === undefined) continue;
    const lines = c.oldOid ? await addedLines(root, c.oldOid, oid) : 'all';
    found.push(...findSkipMarkers(text, c.path, lines).map((m) => ({ ...m, file: c.path })));
  }
  return found;
}

function evidenceOf(base: string, changes: Change[], counts: (c: Change) => [number, number], isTest: (f: string) => boolean, before: number, after: number): string {
  const lines = changes.map((c) => {
    const name = c.oldPath ? `${c.oldPath} -> ${c.path}` : c.path;
    const [was, now] = counts(c);
    const tests = isTest(c.path) || (c.oldPath !== undefined && isTest(c.oldPath)) ? `  (test cases ${was} → ${now})` : '';
    return `${c.status} ${name}${tests}`;
  });
  const text = [`base ${base.slice(0, 12)} → working tree: ${plural(changes.length, 'file')} changed`, ...lines, `test cases in test files: ${before} → ${after}`].join('\n');
  return text.length <= EVIDENCE_CHARS ? text : `${text.slice(0, EVIDENCE_CHARS - 20)}\n... (truncated)`;
}

function names(items: string[]): string {
  return items.length <= MAX_NAMES ? items.join(', ') : `${items.slice(0, MAX_NAMES).join(', ')} and ${items.length - MAX_NAMES} more`;
}

function plural(n: number, noun: string, withCount = true): string {
  const word = n === 1 ? noun : `${noun}s`;
  return withCount ? `${n} ${word}` : word;
}
