import {
  existsSync,
  lstatSync,
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
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { commitWorkspace, prepareWorkspace } from '../../activities/agent/workspace';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import { checkOutTree, type Checkout } from '../../activities/checks/tests/trees';
import type { GitCommitEffectInput, GitCommitEffectResult } from '../../activities/effects';
import { commitTree } from '../../activities/git/commit-tree';
import { snapshotWorkingTree } from '../../activities/git/snapshot';
import { workerGit } from '../../activities/git/worker-git';
import type { ModelClient } from '../../activities/model-port';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { createFileLedger } from '../../activities/tools/ledger';
import { createFileBlobStore } from '../../activities/transcript/store';
import { readReviewDiff } from '../../client/commands/review';
import { reviewedAttempt } from '../../client/review';
import type { RunRecord } from '../../common/run-record';
import { callTool, runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { baseRepo, git } from '../helpers/git';

/**
 * A hostile agent of one L2 run against the work of another L2 run that has not landed (its
 * attempt commits, its per-attempt snapshots, the gate's trees and checkouts, its index, refs
 * and reflogs), through the real tools: run_command in the real bubblewrap sandbox, in the
 * run's workspace as prepareWorkspace makes it, and in the gate's checkout of its tree. Until a
 * change is approved and landed on the target branch it belongs to its run only. Each test
 * here failed on the code before its fix (every run's linked worktree shared the repository's
 * object store, refs, logs and worktree metadata, which each sandbox mounted read-only).
 */
const COMMITTED = 'tok-committed-3f9a1c';
const SNAPSHOT = 'tok-snapshot-77b2e0';
const GATE = 'tok-gate-tree-c41d08';
const SECRETS = [COMMITTED, SNAPSHOT, GATE];

let dir: string;
let repo: string;
let worktrees: string;
let sandbox: Sandbox;
let a: { root: string; branch: string; base: string };
let b: { root: string; branch: string; base: string; commit: string; snapshot: string; gate: string };
let open: Checkout[] = [];

async function prepare(workflowId: string): Promise<{ root: string; branch: string; base: string }> {
  const ws = await prepareWorkspace(worktrees, { workflowId, workspace: repo, autonomy: 'L2' });
  return { root: ws.root, branch: ws.branch!, base: ws.base! };
}

/** Run B as far as a pending run goes: an attempt committed, the next one snapshotted, the gate's tree and checkout of it. */
async function runB(): Promise<typeof b> {
  const ws = await prepare('fix-test/run-b');
  writeFileSync(path.join(ws.root, 'config.env'), `API_TOKEN=${COMMITTED}\n`);
  const { commit } = await commitWorkspace({
    root: ws.root,
    branch: ws.branch,
    message: 'loopwright: attempt 1 of run-b',
  });
  // The next attempt, as the diff policy and the judge take it: a snapshot of the working tree.
  writeFileSync(path.join(ws.root, 'draft.env'), `DRAFT_TOKEN=${SNAPSHOT}\n`);
  const snapshot = await snapshotWorkingTree(ws.root);
  // A tree of the gate's own (an overlay whose runner config the gate rewrote), and its checkout, held open.
  const blob = (await workerGit(ws.root, ['hash-object', '-w', '--stdin'], { input: `{"gate":"${GATE}"}\n` })).trim();
  const gate = (await workerGit(ws.root, ['mktree'], { input: `100644 blob ${blob}\tgate.json\n` })).trim();
  open.push(await checkOutTree(ws.root, snapshot, commit!, path.join(dir, 'gate'), 'run-b-overlay'));
  return { ...ws, commit: commit!, snapshot, gate };
}

beforeEach(async () => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-session11-')));
  repo = path.join(dir, 'repo');
  baseRepo(repo);
  // LOOPWRIGHT_HOME is <dir>/home for the sandbox (sandboxIn): the worktrees lie there, as by default.
  worktrees = path.join(dir, 'home', 'worktrees');
  sandbox = sandboxIn(dir);
  a = await prepare('fix-test/run-a');
  b = await runB();
});
afterEach(async () => {
  for (const c of open) await c.remove();
  open = [];
  rmSync(dir, { recursive: true, force: true });
});

/** What must never show in run A's sandbox: B's secrets, B's commit and tree ids, B's branch. */
function expectNothingOfB(seen: string): void {
  for (const s of SECRETS) expect(seen).not.toContain(s);
  for (const id of [b.commit, b.snapshot, b.gate]) expect(seen).not.toContain(id);
  // (Not B's branch name itself: the commands that ask for it echo it in their error.)
  expect(seen).not.toMatch(
    /refs\/heads\/loopwright\/fix-test-run-b|loopwright_fix-test-run-b|\+ loopwright\/fix-test-run-b/,
  );
}

/** Every way through git to another run's work. */
const THROUGH_GIT = [
  'git show loopwright/fix-test-run-b:config.env',
  'git show loopwright/fix-test-run-b',
  'git for-each-ref',
  'git branch -a',
  'git worktree list --porcelain',
  'git rev-list --all --reflog --objects',
  'git log --all --reflog -p',
  'git cat-file --batch-all-objects --batch',
  'git fsck --unreachable --no-reflogs --no-progress',
  'git rev-parse ORIG_HEAD FETCH_HEAD',
  'true',
].join('; ');

/**
 * Every file of every git directory A's git reads, and what lies beside them: the common dir, the
 * object stores its alternates name and their repositories, each one's refs, packed-refs, logs,
 * worktree metadata (HEAD, index, ORIG_HEAD), FETCH_HEAD; every loose object inflated; and B's
 * folder by its path.
 */
const throughFiles = (worktreesDir: string) =>
  [
    'set +e',
    'common=$(git rev-parse --path-format=absolute --git-common-dir)',
    'dirs="$common $(git rev-parse --path-format=absolute --git-dir)"',
    'for alt in $(cat "$common"/objects/info/alternates 2>/dev/null); do dirs="$dirs $alt $alt/.."; done',
    'for d in $dirs; do echo "== $d"; ls -la "$d" 2>&1; cat "$d"/packed-refs "$d"/FETCH_HEAD "$d"/ORIG_HEAD 2>/dev/null;',
    '  find "$d"/refs "$d"/logs "$d"/worktrees -type f 2>/dev/null | while read f; do echo "-- $f"; cat -v "$f"; done;',
    `  find "$d" -type f -path "*/objects/??/*" 2>/dev/null | while read f; do perl -MCompress::Zlib -e 'local $/; open F, "<", $ARGV[0]; print uncompress(<F>)' "$f" | cat -v; done;`,
    '  find "$d" -name "*.pack" 2>/dev/null | while read p; do git verify-pack -v "$p" 2>&1; done;',
    'done',
    `ls -la ${worktreesDir} 2>&1; cat ${worktreesDir}/*/config.env ${worktreesDir}/*/draft.env 2>&1`,
    `find ${worktreesDir} -type f 2>/dev/null | while read f; do cat -v "$f"; done`,
    'true',
  ].join('\n');

/** The git_commit effect's input that lands run B's committed change on main. */
const landingOfB = () => ({
  key: 'fix-test/run-b/commit/1',
  repo,
  branch: b.branch,
  message: 'Add config',
  verified: b.commit,
  base: b.base,
});

describe('run A’s sandbox and another pending run’s work', () => {
  test('through git: B’s branch, commits, snapshots and the gate’s trees are not there (by name, by listing, by every object)', async () => {
    const seen = await runShell(toolContext(sandbox, a.root, ['sh'], 30_000), THROUGH_GIT);
    expectNothingOfB(seen);
  });

  test('through the files: no refs, packed-refs, logs, worktree metadata, index or loose object of B’s is readable', async () => {
    const seen = await runShell(toolContext(sandbox, a.root, ['sh'], 30_000), throughFiles(worktrees));
    expectNothingOfB(seen);
    // It did look: its own refs, and the objects it borrows (the base commit, inflated from the repository's store).
    expect(seen).toContain('refs/heads/loopwright/fix-test-run-a');
    expect(seen).toContain('committer t <t@t>');
  });

  test('nor from the gate’s checkout of A’s tree, where the gate runs A’s tests', async () => {
    writeFileSync(path.join(a.root, 'fix.txt'), 'fix\n');
    const { commit } = await commitWorkspace({
      root: a.root,
      branch: a.branch,
      message: 'loopwright: attempt 1 of run-a',
    });
    const tree = (await workerGit(a.root, ['rev-parse', `${commit}^{tree}`])).trim();
    const c = await checkOutTree(a.root, tree, a.base, path.join(dir, 'gate'), 'run-a-candidate');
    open.push(c);
    const ctx = toolContext(sandbox, c.dir, ['sh'], 30_000);
    expectNothingOfB(await runShell(ctx, THROUGH_GIT));
    expectNothingOfB(await runShell(ctx, throughFiles(worktrees)));
    // The gate's checkout still has the git it needs: its own history, read-only.
    const own = await runShell(ctx, 'git log --format=%s -1 && cat fix.txt && git status --porcelain && echo ok');
    expect(own).toContain('ok');
    expect(own).toContain('fix');
  });

  test('A’s agent keeps the git it needs: its history, its files at base, its diff; and still cannot write its repository', async () => {
    const ctx = toolContext(sandbox, a.root, ['sh'], 30_000);
    const out = await runShell(
      ctx,
      'echo changed > a.txt; git log --format=%s -1; git show HEAD:a.txt; git diff --stat; git status --porcelain; echo end',
    );
    expect(out).toContain('base');
    expect(out).toContain('a.txt | 2');
    expect(out).toContain(' M a.txt');
    expect(out).toContain('end');
    const write = await runShell(
      ctx,
      'git commit -qam x 2>&1; git update-ref refs/heads/x HEAD 2>&1; echo x > .git/objects/info/alternates 2>&1; ls; true',
    );
    expect(write).toMatch(/Read-only file system|unable to|cannot/i);
    expect(git(a.root, 'log', '--format=%s', '-1')).toBe('base');
  });
});

describe('landing an approved run', () => {
  const acts = () =>
    createActivities({
      model: {} as ModelClient,
      sandbox,
      store: createFileBlobStore(path.join(dir, 'transcripts')),
      ledger: createFileLedger(path.join(dir, 'ledger')),
      env: { PATH: process.env.PATH },
      worktreesDir: worktrees,
    });
  const apply = (input: GitCommitEffectInput): Promise<GitCommitEffectResult> =>
    new MockActivityEnvironment().run(acts().applyEffect, input);
  const has = (cwd: string, id: string) => {
    try {
      git(cwd, 'cat-file', '-e', id);
      return true;
    } catch {
      return false;
    }
  };

  test('before approval nothing of B is in the repository; the effect lands B’s verified commit on main, and review shows its diff', async () => {
    // Not in the target's objects, refs or worktree list while B waits for its approval.
    for (const id of [b.commit, b.snapshot, b.gate]) expect(has(repo, id)).toBe(false);
    expect(git(repo, 'for-each-ref', '--format=%(refname)')).not.toContain('loopwright/');
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.toContain('loopwright');
    const record = {
      workflowId: 'fix-test/run-b',
      state: 'awaiting_human',
      attempts: [{ n: 1, candidate: 'c', passed: true, reasons: [], verdicts: [], usage: null, commit: b.commit }],
      workspace: { root: b.root, branch: b.branch },
    } as unknown as RunRecord;
    const diff = await readReviewDiff(record, reviewedAttempt(record));
    expect(diff.status).toBe('ok');
    if (diff.status === 'ok') {
      expect(diff.base).toBe(b.base);
      expect(diff.patch).toContain(`+API_TOKEN=${COMMITTED}`);
      expect(diff.stat).toContain('config.env');
    }
    const input = landingOfB();
    const landed = await apply(input);
    expect(landed.alreadyApplied).toBe(false);
    expect(git(repo, 'show', `main:config.env`)).toBe(`API_TOKEN=${COMMITTED}`);
    expect(readFileSync(path.join(repo, 'config.env'), 'utf8')).toBe(`API_TOKEN=${COMMITTED}\n`);
    expect(git(repo, 'rev-parse', 'main^')).toBe(b.base);
    expect(git(repo, 'status', '--porcelain')).toBe('');
    git(repo, 'fsck', '--no-progress', '--no-dangling');
    // Only what landed came in: not B's later snapshot nor the gate's tree.
    for (const id of [b.snapshot, b.gate]) expect(has(repo, id)).toBe(false);
    // A retry, a second approval: the same commit, once.
    expect(await apply(input)).toMatchObject({ commit: landed.commit, alreadyApplied: true });
    expect(git(repo, 'rev-list', '--count', 'main')).toBe('2');
    // The review of the landed run still shows the change it approved.
    const after = await readReviewDiff(record, reviewedAttempt(record));
    expect(after.status === 'ok' && after.patch).toContain(`+API_TOKEN=${COMMITTED}`);
  });

  test('onto a main that moved since B forked: B’s change alone, merged 3-way; a run made later starts from the landed commit', async () => {
    writeFileSync(path.join(repo, 'NOTES.md'), 'teammate\n');
    git(repo, 'add', 'NOTES.md');
    git(repo, 'commit', '-q', '-m', 'teammate');
    const landed = await apply(landingOfB());
    expect(git(repo, 'ls-tree', '--name-only', landed.commit).split('\n').sort()).toEqual([
      'NOTES.md',
      'a.txt',
      'config.env',
    ]);
    const c = await prepare('fix-test/run-c');
    expect(c.base).toBe(landed.commit);
    expect(readFileSync(path.join(c.root, 'config.env'), 'utf8')).toContain(COMMITTED);
    // The landed commit is public to later runs by design; B's unlanded snapshot is not.
    const seen = await runShell(
      toolContext(sandbox, c.root, ['sh'], 30_000),
      'git cat-file --batch-all-objects --batch; true',
    );
    expect(seen).toContain(COMMITTED);
    expect(seen).not.toContain(SNAPSHOT);
    expect(seen).not.toContain(GATE);
  });

  test('a landing refused for a conflict leaves nothing of B’s in the repository (the merge is made in a scratch store)', async () => {
    writeFileSync(path.join(repo, 'config.env'), 'API_TOKEN=the-teammates\n');
    git(repo, 'add', 'config.env');
    git(repo, 'commit', '-q', '-m', 'teammate');
    const before = git(repo, 'count-objects', '-v');
    await expect(apply(landingOfB())).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining('conflicts with main in config.env'),
    });
    expect(git(repo, 'count-objects', '-v')).toBe(before);
    for (const id of [b.commit, b.snapshot, b.gate]) expect(has(repo, id)).toBe(false);
    const seen = await runShell(
      toolContext(sandbox, a.root, ['sh'], 30_000),
      'git cat-file --batch-all-objects --batch; true',
    );
    expect(seen).toContain('the-teammates');
    for (const s of SECRETS) expect(seen).not.toContain(s);
  });

  test('a run started before this change (a linked worktree at its folder) goes on working and lands', async () => {
    const root = path.join(worktrees, 'loopwright_fix-test-run-old');
    git(repo, 'worktree', 'add', '-q', '--no-checkout', '-b', 'loopwright/fix-test-run-old', root, 'HEAD');
    const ws = await prepareWorkspace(worktrees, { workflowId: 'fix-test/run-old', workspace: repo, autonomy: 'L2' });
    expect(ws.root).toBe(realpathSync(root));
    expect(ws.base).toBe(git(repo, 'rev-parse', 'main'));
    expect(existsSync(path.join(root, 'a.txt'))).toBe(true);
    writeFileSync(path.join(root, 'old.txt'), 'old run\n');
    const { commit } = await commitWorkspace({ root, branch: ws.branch!, message: 'loopwright: attempt 1 of run-old' });
    expect(await runShell(toolContext(sandbox, root, ['sh'], 30_000), 'git log --format=%s -1')).toContain('attempt 1');
    const landed = await apply({
      key: 'fix-test/run-old/commit/1',
      repo,
      branch: ws.branch!,
      message: 'Old run',
      verified: commit!,
      base: ws.base!,
    });
    expect(git(repo, 'show', `${landed.commit}:old.txt`)).toBe('old run');
  });

  test('commitTree in a run’s own repository stays there (the gate’s checkout commits, merge sides)', async () => {
    const tree = (await workerGit(b.root, ['rev-parse', `${b.commit}^{tree}`])).trim();
    const side = await commitTree(b.root, tree, [b.base], 'loopwright: a checkout for the tests check');
    expect(has(repo, side)).toBe(false);
  });
});

describe('the run’s own repository', () => {
  test('follows the repository’s own ignore rules (info/exclude) as the linked worktree did', async () => {
    writeFileSync(path.join(repo, '.git', 'info', 'exclude'), 'local.env\n');
    const c = await prepare('fix-test/run-exclude');
    writeFileSync(path.join(c.root, 'local.env'), 'LOCAL=1\n');
    writeFileSync(path.join(c.root, 'fix.txt'), 'fix\n');
    const { commit } = await commitWorkspace({ root: c.root, branch: c.branch, message: 'loopwright: attempt 1' });
    expect(git(c.root, 'ls-tree', '--name-only', commit!).split('\n')).toEqual(['a.txt', 'fix.txt']);
  });

  test('an approval on a worker that does not have the run’s repository says so, and changes nothing', async () => {
    const elsewhere = createActivities({
      model: {} as ModelClient,
      sandbox,
      store: createFileBlobStore(path.join(dir, 'transcripts')),
      ledger: createFileLedger(path.join(dir, 'ledger')),
      env: { PATH: process.env.PATH },
      worktreesDir: path.join(dir, 'other-worktrees'),
    });
    const main = git(repo, 'rev-parse', 'main');
    await expect(new MockActivityEnvironment().run(elsewhere.applyEffect, landingOfB())).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining('is not on this worker'),
    });
    expect(git(repo, 'rev-parse', 'main')).toBe(main);
  });
});

describe('the worker’s own folders in a workspace that holds LOOPWRIGHT_HOME', () => {
  // Checked whether an agent can plant a symlink where the worker later makes its folders (its
  // recursive mkdir would follow it): it cannot. The sandbox makes LOOPWRIGHT_HOME (and the other
  // folders of the worker's that lie in the workspace) before the first command, masks it, and
  // pins every folder above it; the file tools refuse its paths and make no symlinks.
  test('an L1 agent cannot make the worker’s worktrees folder a symlink', async () => {
    const ws = path.join(dir, 'ws');
    mkdirSync(ws);
    const elsewhere = path.join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const home = path.join(ws, 'vendor', 'lw', '.loopwright');
    const saved = process.env.LOOPWRIGHT_HOME;
    process.env.LOOPWRIGHT_HOME = home;
    try {
      const c = toolContext(sandboxIn(dir, { LOOPWRIGHT_HOME: home }), ws, ['sh'], 20_000);
      const write = await callTool(c, 'write_file', { path: 'vendor/lw/.loopwright/worktrees/x', content: 'x' });
      expect(write.content).toContain('refused');
      await runShell(
        c,
        [
          `ln -s ${elsewhere} vendor/lw/.loopwright/worktrees`,
          `ln -sfn ${elsewhere} vendor/lw/.loopwright`,
          'mv vendor/lw/.loopwright vendor/lw/old',
          'rm -rf vendor/lw/.loopwright',
          `mv vendor v2 && mkdir -p vendor/lw && ln -s ${elsewhere} vendor/lw/.loopwright`,
          'true',
        ].join('; '),
      );
      expect(lstatSync(home).isSymbolicLink()).toBe(false);
      mkdirSync(path.join(home, 'worktrees'), { recursive: true });
      expect(realpathSync(path.join(home, 'worktrees'))).toBe(path.join(home, 'worktrees'));
      expect(readdirSync(elsewhere)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.LOOPWRIGHT_HOME;
      else process.env.LOOPWRIGHT_HOME = saved;
    }
  });
});

describe('what a run working in place in the repository writes', () => {
  // An L1 run (or an L3 run without a git commit to deliver) works in the repository's own working
  // tree. Its checks (the diff policy's, the judge's snapshots, the gate's trees and checkout
  // commits) write into a private object store of their own (git/private-objects.ts), not into
  // the repository's, which every L2 run's repository borrows and its sandbox mounts read-only.
  // More ways in, and the judge's and the gate's trees: test/security/in-place-objects.test.ts.
  test('an L2 run cannot read what an L1 run in place snapshotted', async () => {
    writeFileSync(path.join(repo, 'l1.env'), `L1_TOKEN=${SNAPSHOT}-l1\n`);
    const verdict = await runDiffPolicyCheck({
      check: { kind: 'diff', name: 'change policy', allowedPaths: ['l1.env'] },
      root: repo,
      baseRef: 'HEAD',
    });
    expect(verdict.evidence).toContain('A l1.env');
    const seen = await runShell(
      toolContext(sandbox, a.root, ['sh'], 30_000),
      'git cat-file --batch-all-objects --batch | grep -a L1_TOKEN; true',
    );
    expect(seen).not.toContain(`${SNAPSHOT}-l1`);
  });
});
