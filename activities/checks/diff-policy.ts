import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';
import { withPrivateObjects } from '../git/private-objects';
import { EVIDENCE_CHARS } from './command';
import { diffTrees, ignoredPaths, removedLines, resolveTrees, type Change } from './diff-policy/git';
import { compileAllowedPaths } from './diff-policy/paths';
import { runnerConfigMatcher, testInfraMatcher } from './tests/infra';
import { testFrameworkUsers } from './tests/frameworks';
import { infraImports } from './tests/infra-imports';
import { blobText, isManifest, runnerFieldChanges } from './tests/manifest';
import { pythonShadows, shadowingFiles } from './tests/shadows';
import { pythonImports } from './tests/python-imports';
import { listTree } from './tests/trees';
import { addedLines, isProbedCode, testProbes, type TestProbe } from './diff-policy/test-detection';

export { DEFAULT_TEST_PATTERN } from './diff-policy/paths';

/** The standard rubric for code changes (see `runDiffPolicyCheck`). */
export interface DiffPolicyCheck {
  kind: 'diff';
  name: string;
  /** Path prefixes or globs (`src/`, `lib/**`, `test/math.test.js`); a change elsewhere fails. */
  allowedPaths: string[];
  /** Kept for specs pinned before the tests check: a regression test is the `tests` check's rule now. */
  requireRegressionTest?: boolean;
  /** `human`: a change to existing test infrastructure passes the check but goes to a person's review. */
  testChanges?: 'fail' | 'human';
  /** Regular expression source for test files; default `DEFAULT_TEST_PATTERN`. */
  testPattern?: string;
}

export interface DiffPolicyInput {
  check: DiffPolicyCheck;
  /** The git repository or worktree the run works in; paths are relative to it. */
  root: string;
  /** The commit the run's changes are compared with, e.g. the fork point of the run's branch. */
  baseRef: string;
  /** The workspace is the run's own worktree (it started clean): look for stray ignored files. */
  isolated?: boolean;
}

/** How many names a reason lists before it says "and N more". */
const MAX_NAMES = 10;

/**
 * What a run's own worktree may hold that is not in its commit: dependency folders and caches a
 * test run makes. Anything else ignored that appears there (an `.npmrc`, an `.env`, a config
 * file) was left by the attempt and would change how tests run for whoever runs them there.
 */
const EXPECTED_LEFTOVERS =
  /^(?:node_modules|\.venv|venv|__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache|\.tox|\.nox|coverage|\.nyc_output|dist|build|target|\.gradle|\.cache|\.turbo|\.next|\.parcel-cache|\.eslintcache|\.DS_Store)(?:\/|$)|(?:^|\/)(?:__pycache__|node_modules)\/|\.py[co]$/;

interface Failure {
  rule: 'allowed paths' | 'tests append-only' | 'no test detection' | 'no stray files';
  reason: string;
  correction: string;
}

/**
 * Checks a code change against the standard rubric, deterministically and without a model:
 * it compares `baseRef` with the working state of the workspace (HEAD plus staged, unstaged and
 * untracked files; ignored files do not count), staged into a temporary index so the
 * repository's own index is untouched. It fails, listing every broken rule in `failedItems`, when
 * - `allowed paths`: a changed, added, deleted or renamed path is outside `allowedPaths`;
 * - `tests append-only`: test infrastructure that base had (test files, helpers, fixtures,
 *   mocks, runner configuration: activities/checks/tests/infra.ts) is deleted, renamed, or has a
 *   line changed or removed, or a runner configuration file is added, or a `package.json`'s
 *   scripts or runner keys change (tests/manifest.ts), or an added file would be loaded in place
 *   of one of base's (tests/shadows.ts; adding new tests, to a new file or to an existing one,
 *   is fine);
 * - `no test detection`: a line the change adds to code (not test infrastructure) reads what only
 *   tells a test run from real use: a runner's variables, the command line, who loaded the
 *   module, its own call stack, the test framework (diff-policy/test-detection.ts), or imports
 *   base's test helpers or test files, which it could then rewrite in-process (tests/infra-imports.ts);
 * - `no stray files` (`isolated` workspaces only: the run's own worktree, which started clean):
 *   the attempt left ignored files beside its commit other than dependency folders and caches.
 * Whether the tests really test anything is the `tests` check's business: by identity, on
 * clean checkouts, as the runner reports them (no regular expressions over test source here).
 * Costs no tokens. A workspace that is not a git repository, an unknown base or an invalid
 * `testPattern` is a non-retryable failure (`WorkspaceError`, `ConfigError`), not a verdict.
 * The snapshot it compares is written to a private object store removed after (nothing lands in
 * the repository, see git/private-objects.ts).
 */
export async function runDiffPolicyCheck(input: DiffPolicyInput): Promise<Verdict> {
  return withPrivateObjects(input.root, () => diffPolicy(input));
}

async function diffPolicy(input: DiffPolicyInput): Promise<Verdict> {
  const { check, root } = input;
  const byName = infraMatcher(check);
  const isRunnerConfig = runnerConfigMatcher();
  const isAllowed = compileAllowedPaths(check.allowedPaths);
  const { base, baseTree, workTree } = await resolveTrees(root, input.baseRef);
  const changes = await diffTrees(root, baseTree, workTree);
  // A file that imports a test framework at base, or one the change adds that does, is test infrastructure whatever its name.
  const [atBase, inChange] = await Promise.all([
    testFrameworkUsers(root, [baseTree]),
    testFrameworkUsers(root, [workTree]),
  ]);
  const addedNow = new Set(changes.filter((c) => c.status === 'A').map((c) => c.path));
  const isInfra = (file: string) => byName(file) || atBase.has(file) || (inChange.has(file) && addedNow.has(file));

  const failures: Failure[] = [];
  const outside = [
    ...new Set(
      changes.flatMap((c) => [c.oldPath, c.path]).filter((p): p is string => p !== undefined && !isAllowed(p)),
    ),
  ];
  if (outside.length > 0) {
    const allowed = check.allowedPaths.join(', ');
    failures.push({
      rule: 'allowed paths',
      reason: `${plural(outside.length, 'changed path')} outside the allowed paths (${allowed}): ${names(outside)}`,
      correction: `revert your changes to ${names(outside)}: only ${allowed} may change`,
    });
  }

  const weakened: string[] = [];
  for (const c of changes) {
    const was = c.oldPath ?? c.path;
    // A new runner configuration (conftest.py, jest.config.js, a committed .npmrc) changes how the existing tests run.
    if (c.status === 'A' && isRunnerConfig(c.path)) weakened.push(`${c.path} added (runner configuration)`);
    // package.json's scripts and runner keys decide how tests run; its other keys (dependencies) are the fix's.
    const manifestBefore = isManifest(was) && !isInfra(was) ? c.oldOid : null;
    const manifestAfter = isManifest(c.path) && !isInfra(c.path) ? c.newOid : null;
    if (manifestBefore || manifestAfter) {
      const before = manifestBefore ? await blobText(root, manifestBefore) : undefined;
      const after = manifestAfter ? await blobText(root, manifestAfter) : undefined;
      const fields = runnerFieldChanges(manifestAfter ? c.path : was, before, after);
      if (fields.length > 0)
        weakened.push(`${manifestAfter ? c.path : was}: ${fields.join(', ')} (runner configuration)`);
    }
    if (!isInfra(was) || c.status === 'A') continue;
    if (c.status === 'D') weakened.push(`${was} deleted`);
    else if (c.status === 'R') weakened.push(`${was} renamed to ${c.path}`);
    else if (c.status === 'T') weakened.push(`${was} turned into another kind of file`);
    else if (c.oldOid && c.newOid) {
      const removed = await removedLines(root, c.oldOid, c.newOid);
      // The lines shown are the first that say something (a removed blank line is counted, not shown).
      const shown = removed.filter((r) => r.text.trim() !== '').slice(0, 3);
      if (removed.length > 0)
        weakened.push(
          `${(shown.length ? shown : removed.slice(0, 1)).map((r) => `${was}:${r.line}${r.text.trim() ? ` \`${r.text.trim().slice(0, 60)}\`` : ''}`).join(', ')}${removed.length > shown.length ? ` (${removed.length} lines in all)` : ''} changed or removed`,
        );
    }
  }
  const baseFiles = [...(await listTree(root, baseTree)).keys()];
  // Base's test helpers and test files (not its installed or vendored packages): code that loads one can rewrite it in-process.
  const helpers = new Set(baseFiles.filter((f) => (byName(f) || atBase.has(f)) && !isRunnerConfig(f)));
  const probes: TestProbe[] = [];
  for (const c of changes)
    // Code the change made use a test framework is still read for test detection (it may import one to look at the run).
    if (c.newOid && c.status !== 'D' && !byName(c.path) && !atBase.has(c.path) && isProbedCode(c.path)) {
      const lines = await addedLines(root, c.oldOid, c.newOid).catch(() => []);
      probes.push(...testProbes(c.path, lines));
      for (const i of infraImports(c.path, lines, helpers, baseFiles))
        probes.push({ file: i.file, line: i.line, text: i.text, what: `loads base's test infrastructure ${i.loads}` });
    }
  const added = changes.filter((c) => c.status === 'A' || c.status === 'R').map((c) => c.path);
  const imported = added.some((f) => /\.(py|pyc|so|pyd)$/.test(f)) ? await pythonImports(root, baseTree) : undefined;
  for (const s of [...shadowingFiles(added, baseFiles.filter(isInfra)), ...pythonShadows(added, baseFiles, imported)])
    weakened.push(`${s.file} added, which would be loaded in place of ${s.shadows}`);
  const toHuman = weakened.length > 0 && check.testChanges === 'human';
  if (weakened.length > 0 && !toHuman) {
    failures.push({
      rule: 'tests append-only',
      reason: `the change alters existing test infrastructure: ${names(weakened)}`,
      correction: `restore ${names(weakened.map((w) => w.split(/[: ]/)[0] ?? w))} as base has ${weakened.length === 1 ? 'it' : 'them'}: existing tests, helpers, fixtures and runner config may only be added to, so fix the code instead`,
    });
  }

  if (probes.length > 0) {
    const shown = probes.slice(0, MAX_NAMES).map((p) => `${p.file}:${p.line} \`${p.text.slice(0, 80)}\` (${p.what})`);
    failures.push({
      rule: 'no test detection',
      reason: `the change's code checks whether it runs under a test: ${shown.join(', ')}${probes.length > shown.length ? ` and ${probes.length - shown.length} more` : ''}`,
      correction: `remove from ${names([...new Set(probes.map((p) => p.file))])} every check of the test runner, its variables, the command line or the call stack, and every import of the tests' own files and helpers: the code must do under test what it does in use, so fix the bug itself`,
    });
  }

  if (input.isolated) {
    const strays = (await ignoredPaths(root)).filter((p) => !EXPECTED_LEFTOVERS.test(p));
    if (strays.length > 0) {
      failures.push({
        rule: 'no stray files',
        reason: `the attempt left ignored ${plural(strays.length, 'file', false)} beside its commit, which a clean checkout does not have: ${names(strays)}`,
        correction: `delete ${names(strays)}: checks run on a clean checkout of your commit, so files git ignores cannot make them pass`,
      });
    }
  }

  const evidence = evidenceOf(base, changes, isInfra);
  const summary = `${plural(changes.length, 'file')} changed since ${base.slice(0, 12)}`;
  const passed = failures.length === 0;
  return {
    check: check.name,
    kind: 'diff',
    passed,
    reason: passed
      ? `the change keeps to the policy: ${summary}`
      : `${failures.map((f) => f.reason).join('; ')} (${summary})`,
    failedItems: failures.map((f) => f.rule),
    requiredCorrection: failures.map((f) => f.correction).join('; '),
    evidence,
    ...(toHuman
      ? {
          humanReview: `the change alters existing test infrastructure, which this loop sends to a person: ${names(weakened)}`,
        }
      : {}),
    usage: { ...ZERO_USAGE },
  };
}

/** Test infrastructure, with the loop's own test-file pattern when it gives one (RE2). */
function infraMatcher(check: DiffPolicyCheck): (file: string) => boolean {
  try {
    return testInfraMatcher(check.testPattern);
  } catch (err) {
    throw nonRetryableFailure(
      FailureType.Config,
      `check ${check.name} has an invalid testPattern ${JSON.stringify(check.testPattern)}: ${(err as Error).message}; fix the loop spec`,
    );
  }
}

function evidenceOf(base: string, changes: Change[], isInfra: (f: string) => boolean): string {
  const lines = changes.map(
    (c) =>
      `${c.status} ${c.oldPath ? `${c.oldPath} -> ${c.path}` : c.path}${isInfra(c.path) || (c.oldPath !== undefined && isInfra(c.oldPath)) ? '  (test infrastructure)' : ''}`,
  );
  const text = [`base ${base.slice(0, 12)} → working tree: ${plural(changes.length, 'file')} changed`, ...lines].join(
    '\n',
  );
  return text.length <= EVIDENCE_CHARS ? text : `${text.slice(0, EVIDENCE_CHARS - 20)}\n... (truncated)`;
}

function names(items: string[]): string {
  return items.length <= MAX_NAMES
    ? items.join(', ')
    : `${items.slice(0, MAX_NAMES).join(', ')} and ${items.length - MAX_NAMES} more`;
}

function plural(n: number, noun: string, withCount = true): string {
  const word = n === 1 ? noun : `${noun}s`;
  return withCount ? `${n} ${word}` : word;
}
