import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { prepareWorkspace } from '../../activities/agent/workspace';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import { readChange } from '../../activities/checks/judge';
import { gateScratchDir } from '../../activities/checks/workspace';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import type { Autonomy } from '../../common/loop-spec';
import { CORPUS_FAILING_TEST, CORPUS_FILES, CORPUS_FIX, gateTests, writeFiles } from '../gate/corpus-repo';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { git } from '../helpers/git';

/**
 * A run in place (L1, or L3 without a git commit to deliver) works in the target repository's own
 * working tree, and its checks hash what is there (untracked files like a `.env` included): the
 * change policy's and the judge's snapshots of the working state, the gate's candidate, overlay
 * and regression trees, the blobs it rewrites and the commits of its checkouts. Each L2 run's
 * repository borrows the target's object store, which its sandbox mounts read-only. Here a
 * hostile L2 agent reads that store every way it can (git, every loose object inflated, every
 * pack, fsck's dangling objects), after the in-place checks and while the gate's test run is
 * still going, through the real tools in the real bubblewrap sandbox. On the code before the
 * checks got a private object store (git/private-objects.ts), every one of these found the
 * in-place run's secrets.
 */
const L1_ENV = 'tok-l1-untracked-5e1d2a';
const JUDGE_ENV = 'tok-judge-snapshot-90c3b7';
const GATE_ENV = 'tok-gate-candidate-a4f611';
const GATE_MANIFEST = 'tok-gate-overlay-manifest-1b7e90';
const L3_ENV = 'tok-l3-untracked-d2c8e4';
const SECRETS = [L1_ENV, JUDGE_ENV, GATE_ENV, GATE_MANIFEST, L3_ENV];

let dir: string;
let repo: string;
let worktrees: string;
let sandbox: Sandbox;
let base: string;
let l2: string;

/** Every object of the target's store: what the worker's in-place checks must leave as it was. */
const objectsOfTarget = () =>
  git(repo, 'cat-file', '--batch-all-objects', '--batch-check').split('\n').filter(Boolean).sort();

/**
 * What an L2 agent reads of the objects its repository borrows, each way on its own: by git
 * (every object listed and printed), by fsck (dangling and unreachable objects found, each
 * printed; --lost-found too, which the read-only store refuses to write), by the files (every
 * loose object inflated with perl) and by the packs (each object a pack lists, printed).
 */
const WAYS = {
  git: 'git cat-file --batch-all-objects --batch',
  fsck: [
    'git fsck --unreachable --no-reflogs --no-progress 2>&1',
    'git fsck --lost-found --no-progress 2>&1',
    'for id in $(git fsck --unreachable --dangling --no-reflogs --no-progress 2>/dev/null | cut -d" " -f3); do git cat-file -p $id; done',
  ].join('\n'),
  loose: [
    'for alt in $(cat .git/objects/info/alternates); do',
    `  find "$alt" -type f -path "*/??/*" | while read f; do perl -MCompress::Zlib -e 'local $/; open F, "<", $ARGV[0]; print uncompress(<F>)' "$f" | cat -v; done`,
    'done',
  ].join('\n'),
  packs: [
    'for alt in $(cat .git/objects/info/alternates); do',
    '  find "$alt" -name "*.pack" | while read p; do echo "== $p"; git verify-pack -v "$p" 2>&1 | while read id rest; do git cat-file -p $id 2>/dev/null; done; done',
    'done',
  ].join('\n'),
};

type Reads = Record<string, string>;

async function l2Reads(): Promise<Reads> {
  const ctx = toolContext(sandbox, l2, ['sh'], 60_000);
  const reads: Reads = {};
  for (const [way, script] of Object.entries(WAYS)) reads[way] = await runShell(ctx, `set +e\n${script}\ntrue`);
  return reads;
}

/** {@link l2Reads}, then again once every object of the target's store is in a pack (as a `git gc` that keeps unreachable ones would have it). */
async function l2ReadsLooseAndPacked(): Promise<Reads> {
  const loose = await l2Reads();
  const all = git(repo, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)');
  execFileSync('git', ['pack-objects', '-q', '.git/objects/pack/pack'], { cwd: repo, input: `${all}\n` });
  git(repo, 'prune-packed');
  const packed = Object.entries(await l2Reads()).map(([way, seen]) => [`${way}, packed`, seen]);
  return { ...loose, ...Object.fromEntries(packed) };
}

/** No secret of the in-place run's, any way read; and each way did read the store (base's objects are there). */
function expectNoSecret(reads: Reads): void {
  const found = Object.fromEntries(
    Object.entries(reads).map(([way, seen]) => [way, SECRETS.filter((secret) => seen.includes(secret))]),
  );
  expect(found).toEqual(Object.fromEntries(Object.keys(reads).map((way) => [way, []])));
  expect(reads.git).toContain('return a - b;');
  expect(reads.loose).toContain('return a - b;');
  expect(reads.fsck).not.toContain('return a - b;');
  if (reads['packs, packed'] !== undefined) expect(reads['packs, packed']).toContain('return a - b;');
}

/** Where a run of `autonomy` without isolation works: the repository itself. */
async function inPlace(workflowId: string, autonomy: Autonomy): Promise<{ root: string; base: string }> {
  const ws = await prepareWorkspace(worktrees, { workflowId, workspace: repo, autonomy });
  expect(ws).toMatchObject({ root: repo, branch: null });
  return { root: ws.root, base: ws.base! };
}

const diffCheck = (root: string) =>
  runDiffPolicyCheck({
    check: { kind: 'diff', name: 'change policy', allowedPaths: ['src/', 'test/', 'package.json', '*.env'] },
    root,
    baseRef: base,
  });

const testsCheck = (workflowId: string, root: string) =>
  gateTests(
    workflowId,
    root,
    { base, commit: null },
    { command: 'node --test', failingTest: CORPUS_FAILING_TEST },
    sandbox,
  );

/** The in-place L1 attempt the gate checks: the fix, a regression test, a runner script the gate rewrites, an untracked secret. */
function writeGateAttempt(): void {
  writeFiles(repo, {
    ...CORPUS_FIX,
    // The gate runs base's scripts with the rest of the change's manifest: a blob of the gate's own (the overlay's package.json).
    'package.json': `${JSON.stringify({ name: 'corpus-math', version: '1.0.1', description: GATE_MANIFEST, private: true, scripts: { test: 'node --test', pretest: 'true' } }, null, 2)}\n`,
    'gate.env': `GATE_TOKEN=${GATE_ENV}\n`,
  });
}

beforeEach(async () => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-in-place-')));
  repo = path.join(dir, 'repo');
  mkdirSync(repo);
  writeFiles(repo, { ...CORPUS_FILES, '.gitignore': 'node_modules/\n' });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  base = git(repo, 'rev-parse', 'HEAD');
  worktrees = path.join(dir, 'home', 'worktrees');
  sandbox = sandboxIn(dir);
  l2 = (await prepareWorkspace(worktrees, { workflowId: 'fix-test/l2', workspace: repo, autonomy: 'L2' })).root;
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('an L2 sandbox and what a run in place hashed', () => {
  test('an L1 run’s change policy snapshot (an untracked .env) stays out of the target’s store', async () => {
    const { root } = await inPlace('fix-test/l1-policy', 'L1');
    writeFileSync(path.join(root, 'l1.env'), `L1_TOKEN=${L1_ENV}\n`);
    const before = objectsOfTarget();
    const verdict = await diffCheck(root);
    // The check saw the file (so it did hash it), and wrote none of it into the repository.
    expect(verdict.evidence).toContain('l1.env');
    expectNoSecret(await l2ReadsLooseAndPacked());
    expect(objectsOfTarget()).toEqual(before);
    // The in-place run's own agent needs none of it: its git works as before in its sandbox.
    const own = await runShell(
      toolContext(sandbox, root, ['sh'], 30_000),
      'git log --format=%s -1 && git status --porcelain && git diff --stat HEAD && echo end',
    );
    expect(own).toMatch(/^base\n\?\? l1\.env\nend\n/);
  });

  test('an L1 run’s judge snapshot stays out of the target’s store, and the judge still reads the change', async () => {
    const { root, base: start } = await inPlace('fix-test/l1-judge', 'L1');
    writeFileSync(path.join(root, 'judge.env'), `JUDGE_TOKEN=${JUDGE_ENV}\n`);
    const before = objectsOfTarget();
    const change = await readChange({ root, base: start, commit: null });
    expect(change.patch).toContain(JUDGE_ENV);
    expectNoSecret(await l2ReadsLooseAndPacked());
    expect(objectsOfTarget()).toEqual(before);
  });

  test('an L3 run in place (no git commit to deliver): its snapshots stay out of the target’s store too', async () => {
    const { root } = await inPlace('fix-test/l3', 'L3');
    writeFileSync(path.join(root, 'l3.env'), `L3_TOKEN=${L3_ENV}\n`);
    const before = objectsOfTarget();
    expect((await diffCheck(root)).evidence).toContain('l3.env');
    expect((await readChange({ root, base, commit: null })).patch).toContain(L3_ENV);
    expectNoSecret(await l2ReadsLooseAndPacked());
    expect(objectsOfTarget()).toEqual(before);
  });

  test('an L1 run’s gate (candidate, overlay and regression trees, a rewritten blob, checkout commits) stays out of the target’s store, and the gate still passes the fix', async () => {
    const { root } = await inPlace('fix-test/l1-gate', 'L1');
    writeGateAttempt();
    const before = objectsOfTarget();
    const worktreesBefore = git(repo, 'worktree', 'list', '--porcelain');
    const verdict = await testsCheck('fix-test/l1-gate', root);
    expect(verdict).toMatchObject({ passed: true, sandbox: 'bwrap' });
    expect(verdict.tests!.failToPass.map((f) => f.test)).toContain(`test/math.test.js > ${CORPUS_FAILING_TEST}`);
    expectNoSecret(await l2ReadsLooseAndPacked());
    expect(objectsOfTarget()).toEqual(before);
    // No worktree of the target's was made for the gate's checkouts either.
    expect(git(repo, 'worktree', 'list', '--porcelain')).toBe(worktreesBefore);
  }, 120_000);

  test('nor while the in-place gate’s test run is still going (its private store is not in any L2 sandbox)', async () => {
    const { root } = await inPlace('fix-test/l1-live', 'L1');
    writeGateAttempt();
    // The gate's test runs wait until this test has looked (a file the worker writes into their checkout).
    writeFiles(repo, {
      'test/wait.test.js': [
        "const test = require('node:test');",
        "const fs = require('node:fs');",
        "const { execSync } = require('node:child_process');",
        "test('waits for the look', async () => {",
        "  fs.writeFileSync('git.out', execSync('git log --format=%s -2 && git status --porcelain && echo git-ok 2>&1').toString());",
        "  fs.writeFileSync('started', '');",
        '  for (let i = 0; i < 600 && !fs.existsSync("looked"); i++) await new Promise((r) => setTimeout(r, 50));',
        '});',
        '',
      ].join('\n'),
    });
    const gate = gateScratchDir('fix-test/l1-live');
    let stop = false;
    let seen: Reads | undefined;
    let gitOut = '';
    let store = '';
    let direct = '';
    const look = (async () => {
      while (!stop) {
        const waiting = existsSync(gate)
          ? readdirSync(gate)
              .map((d) => path.join(gate, d, 'checkout'))
              .filter((c) => existsSync(path.join(c, 'started')) && !existsSync(path.join(c, 'looked')))
          : [];
        for (const checkout of waiting) {
          if (!seen) {
            seen = await l2Reads();
            gitOut = readFileSync(path.join(checkout, 'git.out'), 'utf8');
            // The checkout's .git names the private store: the L2 agent is told where it is, and still cannot read it.
            store =
              /gitdir: (.*)\/\.git\/worktrees\//.exec(readFileSync(path.join(checkout, '.git'), 'utf8'))?.[1] ?? '';
            direct = await runShell(
              toolContext(sandbox, l2, ['sh'], 30_000),
              `ls -la ${store} ${store}/.git 2>&1; cat ${store}/.git/objects/*/* 2>&1 | head -c 2000; true`,
            );
          }
          writeFileSync(path.join(checkout, 'looked'), '');
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      const verdict = await testsCheck('fix-test/l1-live', root);
      expect(verdict.tests!.failToPass.map((f) => f.test)).toContain(`test/math.test.js > ${CORPUS_FAILING_TEST}`);
    } finally {
      stop = true;
      await look;
    }
    expect(seen).toBeDefined();
    expectNoSecret(seen!);
    for (const secret of SECRETS) expect(direct).not.toContain(secret);
    expect(store).toContain(path.join('loopwright', 'objects'));
    expect(direct).toMatch(/No such file or directory/);
    // The gate's own git works in its checkout (the private store holds its commit): its history, a clean status.
    expect(gitOut).toMatch(
      /^loopwright: attempt-1-\w+ checkout for the tests check\nbase\n(\?\? git\.out\n)?git-ok\n$/,
    );
    // Removed with the check.
    expect(existsSync(store)).toBe(false);
  }, 120_000);
});
