import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { type ApplicationFailure } from '@temporalio/common';
import { parseDuration } from '../../common/duration';
import type { TestsCheck } from '../../common/loop-spec';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { loopwrightHome } from '../../server/paths';
import type { KeyRing } from '../../crypto/keyring';
import { isSealed, openFile, sealFile } from '../sealed-file';
import { resolveCommit, treeOf } from '../git/commit-tree';
import { withPrivateObjects } from '../git/private-objects';
import { snapshotWorkingTree } from '../git/snapshot';
import { workerGit } from '../git/worker-git';
import { defaultSandbox, type Sandbox, type SandboxName } from '../sandbox/sandbox';
import { runTests, type TestRun } from '../tests/run-tests';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';
import { currentActivityContext } from '../activity-context';
import { gateScratchDir } from './workspace';
import { evaluateGate, matchFailingTest, type GateFailure } from './tests/evaluate';
import { testInfraMatcher } from './tests/infra';
import { testFrameworkUsers } from './tests/frameworks';
import { checkOutTree, editTree, listTree, type Checkout, type TreeEntry } from './tests/trees';
import { canaryFor } from './tests/canary';
import { readOnlyInfra } from './tests/read-only';
import { pythonShadows, shadowingFiles } from './tests/shadows';
import { pythonImports } from './tests/python-imports';
import { blobText, isManifest, runnerFieldChanges, withBaseRunnerFields, writeBlob } from './tests/manifest';

/** Input of `runTestsCheck`. */
export interface TestsCheckInput {
  workflowId: string;
  attempt: number;
  check: TestsCheck;
  /** The run's workspace (for L2, its git worktree): the repository the change is in. */
  root: string;
  /** The commit the run started from. */
  baseRef: string;
  /** The attempt's commit; null or absent: the workspace's working state is the candidate. */
  commit?: string | null;
  /** The loop's command environment (`spec.sandbox.env`): the gate's runs get exactly what the agent's commands got. */
  env?: Record<string, string>;
}

const configError = (message: string): ApplicationFailure => nonRetryableFailure(FailureType.Config, message);

const PYTHON = /\.(py|pyc|so|pyd)$/;

const differs = (a: TreeEntry | undefined, b: TreeEntry | undefined) => a?.oid !== b?.oid || a?.mode !== b?.mode;

/**
 * The gate of a code change, by test identity, on clean checkouts (never the agent's worktree):
 * the loop's test command runs, in the same sandbox and environment the agent's commands had, on
 * - base (cached per base commit and command): which tests exist, which pass, which fail;
 * - the candidate's code with base's test infrastructure (test files, helpers, fixtures, runner
 *   config and package.json's scripts and runner keys, as base wrote them, and none of the
 *   change's) plus the held-out tests: fail-to-pass and pass-to-pass, whatever the candidate did
 *   to the tests;
 * - the candidate as it would be committed: the tests it added pass;
 * - base's code with the candidate's tests: at least one of them fails (a real regression test).
 * Fails (one `failedItems` entry per broken rule, each reason naming the tests) when the named
 * failing test does not pass, a test that passed at base no longer does, an added test fails, no
 * added test fails without the fix, or a held-out test fails (held-out names are never told to
 * the agent). A run that reports no tests fails as `test run`. Costs no tokens. The trees,
 * blobs and checkout commits it makes live in a private object store of its own, removed with
 * it (git/private-objects.ts): nothing of it lands in the repository (for a run in place, the
 * target's), whose objects other runs' sandboxes read.
 */
export async function runTestsCheck(
  input: TestsCheckInput,
  sandbox: Sandbox = defaultSandbox(),
  keys?: KeyRing,
): Promise<Verdict> {
  const root = realpathSync(input.root);
  return withPrivateObjects(root, () => gate(input, root, sandbox, keys));
}

/** {@link runTestsCheck} in `root` (the workspace's real path), its objects in force. */
async function gate(input: TestsCheckInput, root: string, sandbox: Sandbox, keys?: KeyRing): Promise<Verdict> {
  const { check } = input;
  const ctx = currentActivityContext();
  const base = await resolveCommit(root, input.baseRef);
  if (!base)
    throw nonRetryableFailure(
      FailureType.Workspace,
      `base ${input.baseRef} is not a commit in the repository at ${root}`,
    );
  if (check.heldOut) checkHeldOut(check.heldOut.dir, root);
  const commit = input.commit ? await resolveCommit(root, input.commit) : undefined;
  const baseTree = await treeOf(root, base);
  const candTree = commit ? await treeOf(root, commit) : await snapshotWorkingTree(root, 'HEAD');
  const [baseFiles, candFiles] = await Promise.all([listTree(root, baseTree), listTree(root, candTree)]);
  // Test infrastructure by its name, and by what it uses: a file that imports a test framework at base, or one the change adds
  // that does. A file of base's code the change makes import one stays code (the canary and the change policy look at it).
  const byName = testInfraMatcher(check.testPattern);
  const [atBase, inChange] = await Promise.all([
    testFrameworkUsers(root, [baseTree]),
    testFrameworkUsers(root, [candTree]),
  ]);
  const isInfra = (file: string) => byName(file) || atBase.has(file) || (inChange.has(file) && !baseFiles.has(file));
  const restore = new Map<string, TreeEntry | null>();
  for (const [file, entry] of baseFiles)
    if (isInfra(file) && differs(entry, candFiles.get(file))) restore.set(file, entry);
  // Test infrastructure base did not have is not in the overlay: a runner configuration (a new conftest.py, jest.config) would
  // change how base's tests run, and a test file or helper of the change's runs beside them (pytest imports every test module
  // into one process, go builds a package's tests into one binary): one collected first could patch the code under test for
  // base's tests. The change's own tests are judged on the candidate as committed.
  for (const file of candFiles.keys()) if (!baseFiles.has(file) && isInfra(file)) restore.set(file, null);
  // What package.json says about running tests (scripts, runner keys) is base's too; the rest is the change's.
  for (const [file, entry] of candFiles) {
    const was = baseFiles.get(file);
    if (!isManifest(file) || isInfra(file) || (was && !differs(entry, was))) continue;
    const before = was ? await blobText(root, was.oid) : undefined;
    const after = await blobText(root, entry.oid);
    if (runnerFieldChanges(file, before, after).length === 0) continue;
    const merged = withBaseRunnerFields(file, before, after);
    restore.set(file, merged === undefined ? (was ?? null) : { mode: entry.mode, oid: await writeBlob(root, merged) });
  }
  // An added file a module loader would take in place of base's helper (test/helpers beside test/helpers.js) is not in the overlay.
  const baseInfra = [...baseFiles.keys()].filter(isInfra);
  const addedFiles = [...candFiles.keys()].filter((f) => !baseFiles.has(f));
  const imported = addedFiles.some((f) => PYTHON.test(f)) ? await pythonImports(root, baseTree) : undefined;
  for (const { file } of [
    ...shadowingFiles(addedFiles, baseInfra),
    ...pythonShadows(addedFiles, baseFiles.keys(), imported),
  ])
    restore.set(file, null);
  const changedCode = [...candFiles]
    .filter(([file, entry]) => !isInfra(file) && differs(entry, baseFiles.get(file)))
    .map(([file]) => file);
  const theirs = new Map<string, TreeEntry | null>();
  for (const [file, entry] of candFiles)
    if (isInfra(file) && differs(entry, baseFiles.get(file))) theirs.set(file, entry);
  // Where the held-out tests go is the gate's: nothing of the change's is there or on the way (a file, or a symlink the copy would follow).
  const into = check.heldOut?.into?.replace(/\/+$/, '');
  const clearInto = new Map<string, TreeEntry | null>();
  if (into)
    for (const file of candFiles.keys())
      if (!baseFiles.has(file) && (file === into || file.startsWith(`${into}/`) || into.startsWith(`${file}/`))) {
        restore.set(file, null);
        clearInto.set(file, null);
      }
  const trees = {
    overlay: await editTree(root, candTree, restore),
    // The held-out tests run in the change as committed too (code that tells the gate's overlay run apart must be general there).
    candidate: clearInto.size > 0 ? await editTree(root, candTree, clearInto) : candTree,
    regression: await editTree(root, baseTree, theirs),
  };

  const timeoutMs = parseDuration(check.timeout) ?? 600_000;
  const scratch = gateScratchDir(input.workflowId);
  const spec = { command: check.command, runner: check.runner, junitPath: check.junitPath };
  const run = async (dir: string, command = check.command, readOnly?: string[]): Promise<TestRun> =>
    runTests(
      { ...spec, command },
      {
        sandbox,
        workspace: dir,
        env: input.env,
        readOnly,
        timeoutMs,
        signal: ctx?.cancellationSignal,
        heartbeat: ctx ? () => ctx.heartbeat() : undefined,
      },
    );
  const inCheckout = async (tree: string, label: string, fn: (c: Checkout) => Promise<TestRun>): Promise<TestRun> => {
    const c = await checkOutTree(root, tree, base, scratch, `attempt-${input.attempt}-${label}`);
    try {
      return await fn(c);
    } finally {
      await c.remove();
      // The run's folder goes with its last checkout (another attempt's may still be in it).
      await rmdir(scratch).catch(() => undefined);
    }
  };

  const baseRun = await cachedBaseRun(root, base, baseTree, check, input.env, keys, () =>
    inCheckout(baseTree, 'base', (c) => run(c.dir)),
  );
  const heldOutDir = check.heldOut?.into;
  const runnerOf = baseRun.runner;
  const canary = canaryFor(
    runnerOf,
    baseRun.results,
    check.failingTest ? matchFailingTest(baseRun.results, check.failingTest) : [],
    changedCode,
  );
  /** The loop's command in a checkout with the held-out tests copied in (if any), its test infrastructure and `gates` read-only. */
  const runWithHeldOut = async (dir: string, files: Iterable<string>, gates: string[]): Promise<TestRun> => {
    if (check.heldOut)
      await cp(check.heldOut.dir, path.join(dir, check.heldOut.into), {
        recursive: true,
        dereference: false,
        errorOnExist: false,
        force: true,
      });
    const readOnly = readOnlyInfra(dir, files, isInfra, gates);
    const main = await run(dir, check.command, readOnly);
    if (!check.heldOut?.command) return main;
    const held = await run(dir, check.heldOut.command, readOnly);
    return {
      ...main,
      results: [
        ...main.results.filter((t) => !t.file?.startsWith(`${heldOutDir}/`)),
        ...held.results.filter((t) => t.file?.startsWith(`${heldOutDir}/`)),
      ],
    };
  };
  const overlayFiles = [...(await listTree(root, trees.overlay)).keys()];
  const overlayRun = await inCheckout(trees.overlay, 'overlay', async (c) => {
    if (canary) {
      // The change may have put something at the canary's path (a symlink out of the checkout): the worker writes no file but its own.
      const file = path.join(c.dir, canary.file);
      await rm(file, { force: true, recursive: true });
      await writeFile(file, canary.source, { flag: 'wx' });
    }
    // The change's code runs here: base's tests, the held-out ones and the canary are read-only to it.
    const gates = [canary?.file, into].filter((p): p is string => p !== undefined);
    return runWithHeldOut(c.dir, overlayFiles, gates);
  });
  // Trees that came out the same are not run twice (the canary's result is ignored outside the overlay). In every run the
  // test infrastructure is read-only: code under test that rewrote the change's regression test as it loads would pass it.
  const candidateRun =
    trees.overlay === candTree && !check.heldOut
      ? { ...overlayRun, results: overlayRun.results.filter((t) => t.file !== canary?.file) }
      : await inCheckout(trees.candidate, 'candidate', async (c) =>
          runWithHeldOut(c.dir, candFiles.keys(), into ? [into] : []),
        );
  const regressionRun =
    trees.regression === baseTree
      ? baseRun
      : await inCheckout(trees.regression, 'regression', async (c) =>
          run(c.dir, check.command, readOnlyInfra(c.dir, (await listTree(root, trees.regression)).keys(), isInfra)),
        );

  const runner = overlayRun.runner;
  const empty = (
    [
      ['base', baseRun],
      ['candidate', candidateRun],
    ] as const
  ).filter(([, r]) => r.results.length === 0);
  const failures: Array<GateFailure | { rule: 'test run' | 'test integrity'; reason: string; correction: string }> =
    empty.map(([label, r]) => ({
      rule: 'test run' as const,
      reason: `\`${check.command}\` reported no tests on the ${label}${r.timedOut ? ` (timed out after ${check.timeout})` : ''}${r.problem ? `: ${r.problem}` : ''}; its output ends with: ${r.output.slice(-400)}`,
      correction:
        label === 'base'
          ? "nothing the agent can change: the loop's test command reports no tests at base; a person must correct it"
          : `make \`${check.command}\` run the tests on a clean checkout of your commit`,
    }));
  // A run whose results something besides the runner tried to send (or whose runner was cut off) is no evidence.
  const tampered = [
    ...new Map<TestRun, string>([
      [overlayRun, "the change's code with base's tests"],
      [candidateRun, 'the change as committed'],
      [regressionRun, "base's code with the change's tests"],
    ]),
  ].filter(([r]) => r.tampered);
  if (tampered.length > 0)
    failures.push({
      rule: 'test integrity',
      reason: `the test ${tampered.length === 1 ? 'run' : 'runs'} on ${tampered.map(([r, label]) => `${label} (${r.tampered})`).join(', ')} ${tampered.length === 1 ? 'is' : 'are'} no evidence`,
      correction:
        'do not send, write or rewrite test results, and do not stop the test runner, from tests or code under test: the gate reads only what the runner reports; fix the bug itself',
    });
  const judged = evaluateGate(
    {
      base: baseRun.results,
      overlay: overlayRun.results,
      candidate: candidateRun.results,
      regression: regressionRun.results,
    },
    {
      runner,
      failingTest: check.failingTest,
      requireRegressionTest: check.requireRegressionTest,
      heldOutDir,
      canaryFile: canary?.file,
    },
  );
  failures.push(...judged.failures);
  const t = judged.evidence;
  const summary = [
    t.failToPass.length
      ? `fail to pass: ${t.failToPass.map((f) => `${f.test} (${f.base} at base → ${f.candidate})`).join('; ')}`
      : null,
    `pass to pass: ${t.passToPass.passing}/${t.passToPass.total}`,
    `added: ${t.added.length} (${t.added.filter((a) => a.candidate === 'passed' && a.base !== 'passed').length} fail without the fix)`,
    t.heldOut ? `held out: ${t.heldOut.passing}/${t.heldOut.total}` : null,
    `${runner}, ${baseRun.results.length} tests at base, on clean checkouts of ${base.slice(0, 12)} and ${commit ? commit.slice(0, 12) : 'the working state'}`,
  ].filter(Boolean);
  const passed = failures.length === 0;
  return {
    check: check.name,
    kind: 'tests',
    passed,
    reason: passed ? `the change passes the gate: ${summary.join('; ')}` : failures.map((f) => f.reason).join('; '),
    failedItems: [...new Set(failures.map((f) => f.rule))],
    requiredCorrection: passed ? '' : failures.map((f) => f.correction).join('; '),
    evidence: summary.join('\n'),
    sandbox: overlayRun.sandbox as SandboxName,
    tests: t,
    usage: { ...ZERO_USAGE },
  };
}

/** A held-out folder must exist on the worker and lie outside the workspace the agent sees. */
function checkHeldOut(dir: string, root: string): void {
  if (!path.isAbsolute(dir) || !existsSync(dir) || !statSync(dir).isDirectory()) {
    throw configError(
      `heldOutTests ${dir} is not a folder on this worker: give the absolute path of a folder of tests (outside the repository)`,
    );
  }
  const rel = path.relative(root, realpathSync(dir));
  if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) {
    throw configError(
      `heldOutTests ${dir} is inside the workspace ${root}, where the agent can read it: keep held-out tests outside the repository`,
    );
  }
}

/**
 * The repository whose base results a git directory shares: itself, or for an L2 run's own
 * repository (agent/workspace.ts), the repository whose objects it borrows (its alternate's),
 * so every run of a repository reuses base's results as when runs were its linked worktrees.
 */
function storeOwner(gitDir: string): string {
  try {
    const [first] = readFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), 'utf8').split('\n');
    const store = first?.trim() ? path.resolve(gitDir, 'objects', first.trim()) : '';
    return store && path.basename(store) === 'objects' ? path.dirname(store) : gitDir;
  } catch {
    return gitDir;
  }
}

/**
 * Base's results, computed once per (repository, base commit, command, runner, environment)
 * and kept in LOOPWRIGHT_HOME/cache/test-results (base is the operator's code: its results do
 * not depend on the agent). What the command printed is kept with them, so with a key ring the
 * file is sealed like a transcript (activities/sealed-file.ts, bound to its name) and written
 * 0600. A cache file that cannot be read, or is in clear while a ring is configured (written
 * before encryption was turned on), is computed again and replaced.
 */
async function cachedBaseRun(
  root: string,
  base: string,
  baseTree: string,
  check: TestsCheck,
  env: Record<string, string> | undefined,
  ring: KeyRing | undefined,
  compute: () => Promise<TestRun>,
): Promise<TestRun> {
  const common = storeOwner(path.resolve(root, (await workerGit(root, ['rev-parse', '--git-common-dir'])).trim()));
  const key = createHash('sha256')
    .update(
      JSON.stringify([common, base, baseTree, check.command, check.runner ?? null, check.junitPath ?? null, env ?? {}]),
    )
    .digest('hex');
  const file = path.join(loopwrightHome(), 'cache', 'test-results', `${key}.json`);
  try {
    const bytes = await readFile(file);
    const sealed = isSealed(bytes);
    if (sealed || !ring) {
      const text = sealed ? openFile(ring, bytes, key, `cached test results ${key}`).toString('utf8') : String(bytes);
      const cached = JSON.parse(text) as TestRun;
      if (Array.isArray(cached.results) && cached.results.length > 0) return cached;
    }
  } catch {
    // not cached yet, or not readable with this ring: computed again
  }
  const fresh = await compute();
  if (fresh.results.length > 0 && !fresh.timedOut) {
    const json = JSON.stringify(fresh);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(`${file}.${process.pid}.tmp`, ring ? sealFile(ring, json, key) : json, { mode: 0o600 });
    await rename(`${file}.${process.pid}.tmp`, file);
  }
  return fresh;
}
