import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { commitWorkspace, prepareWorkspace } from '../../../activities/agent/workspace';
import { applyGitCommit, type GitCommitEffectInput, type GitCommitEffectResult } from '../../../activities/effects';
import * as checkout from '../../../activities/git/checkout';
import { commitTree, moveRef, treeOf } from '../../../activities/git/commit-tree';
import { bringObjects, landingObjects } from '../../../activities/git/land';
import { createSampleRepo } from '../../../loops/fixtures/sample-repo';
import { plainGit } from './hostile-repo';

/**
 * The commit effect as one atomic ref update: it lands the tree the checks verified (not
 * whatever the run's branch holds now), applies only the run's change to a target that is not
 * where the run forked, brings along a target checked out in a linked worktree, finishes the
 * checkout another effect's crash left, and two tries or two effects at once land each effect
 * exactly once with a clean checkout.
 */
const FIX =
  '/** Adds two numbers. */\nfunction add(a, b) {\n  return a + b;\n}\n\n/** Multiplies two numbers. */\nfunction multiply(a, b) {\n  return a * b;\n}\n\nmodule.exports = { add, multiply };\n';

let dir: string;
let repo: string;
let n = 0;

const git = (cwd: string, ...args: string[]) => plainGit(cwd, ...args).trim();
const read = (root: string, file: string) => readFileSync(path.join(root, file), 'utf8');
const withKey = (target: string, key: string) =>
  git(repo, 'log', target, '--format=%H', '--fixed-strings', `--grep=Loopwright-Effect: ${key}`)
    .split('\n')
    .filter(Boolean);

/** A run's workspace whose branch holds `files` in one attempt commit: its branch, base and commit. */
async function run(
  files: Record<string, string>,
): Promise<{ root: string; branch: string; base: string; verified: string; key: string }> {
  n += 1;
  const ws = await prepareWorkspace(path.join(dir, 'worktrees'), {
    workflowId: `fix-test/atomic-${n}`,
    workspace: repo,
    autonomy: 'L2',
  });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(ws.root, file), text);
  const { commit } = await commitWorkspace({
    root: ws.root,
    branch: ws.branch!,
    message: `loopwright: attempt 1 of fix-test/atomic-${n}`,
  });
  return { root: ws.root, branch: ws.branch!, base: ws.base!, verified: commit!, key: `fix-test/atomic-${n}/commit/1` };
}

const effect = (
  r: { branch: string; key: string; verified?: string; base?: string },
  over: Partial<GitCommitEffectInput> = {},
) =>
  applyGitCommit(
    {
      key: r.key,
      repo,
      branch: r.branch,
      message: 'Fix add',
      verified: r.verified,
      base: r.base,
      ...over,
    },
    path.join(dir, 'worktrees'),
  );

/**
 * What effect `r` leaves when it has moved main to its commit (its verified tree, with its key
 * as the trailer) and has not yet brought the checkout along; returns that commit.
 */
async function landAsEffect(r: { root: string; verified: string; key: string }): Promise<string> {
  const parent = git(repo, 'rev-parse', 'main');
  // The effect's own steps: the verified tree (in the run's repository), its objects brought into the repository, one commit.
  const tree = await treeOf(r.root, r.verified);
  const objects = await landingObjects(repo, r.root);
  try {
    await bringObjects(repo, tree, parent, objects.env);
  } finally {
    await objects.remove();
  }
  const landed = await commitTree(repo, tree, [parent], `Fix add\n\nLoopwright-Effect: ${r.key}`);
  await moveRef(repo, 'refs/heads/main', landed, parent, 'test');
  return landed;
}

/** As Temporal would run it: a retryable failure (a lost race, a held lock) is tried again. */
async function retried(fn: () => Promise<GitCommitEffectResult>): Promise<GitCommitEffectResult> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ApplicationFailure || i === 5) throw err;
    }
  }
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-effect-atomic-'));
  repo = createSampleRepo(path.join(dir, 'repo'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('lands the tree the checks verified, not a later commit on the run branch', async () => {
  const r = await run({ 'src/math.js': FIX });
  // After the checks ran, something else lands on the run's branch.
  writeFileSync(path.join(r.root, 'src/math.js'), 'unverified\n');
  const { commit: late } = await commitWorkspace({ root: r.root, branch: r.branch, message: 'not verified' });
  expect(git(r.root, 'rev-parse', r.branch)).toBe(late);
  const result = await effect(r);
  expect(await treeOf(repo, result.commit)).toBe(await treeOf(r.root, r.verified));
  expect(read(repo, 'src/math.js')).toBe(FIX);
  expect(git(repo, 'status', '--porcelain')).toBe('');
});

test("a target behind the run's base gets the run's change alone (3-way with the base), not everything between", async () => {
  const old = git(repo, 'rev-parse', 'main');
  git(repo, 'branch', 'release', old);
  writeFileSync(path.join(repo, 'NOTES.md'), 'only on main\n');
  git(repo, 'add', 'NOTES.md');
  git(repo, '-c', 'user.name=T', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'notes');
  const r = await run({ 'src/math.js': FIX });
  const result = await effect(r, { targetBranch: 'release' });
  expect(git(repo, 'rev-parse', `${result.commit}^`)).toBe(old);
  expect(git(repo, 'ls-tree', '--name-only', result.commit)).not.toContain('NOTES.md');
  expect(git(repo, 'show', `${result.commit}:src/math.js`)).toBe(FIX.trim());
  expect(git(repo, 'status', '--porcelain')).toBe('');
});

test("a target checked out in a linked worktree is brought along; the repository's own checkout is not touched", async () => {
  git(repo, 'branch', 'release');
  const linked = path.join(dir, 'release');
  git(repo, 'worktree', 'add', '-q', linked, 'release');
  const r = await run({ 'src/math.js': FIX });
  const result = await effect(r, { targetBranch: 'release' });
  expect(result.checkout).toEqual({ path: realpathSync(linked), state: 'updated' });
  expect(read(linked, 'src/math.js')).toBe(FIX);
  expect(git(linked, 'status', '--porcelain')).toBe('');
  expect(read(repo, 'src/math.js')).toContain('return a - b;');
  expect(git(repo, 'status', '--porcelain')).toBe('');
});

test("an effect first finishes the checkout another effect's crash left between its ref move and its checkout update", async () => {
  const a = await run({ 'src/math.js': FIX });
  const b = await run({ 'NOTES.md': 'notes\n' });
  const crashed = await landAsEffect(a);
  const result = await effect(b);
  expect(result).toMatchObject({ alreadyApplied: false, checkout: { state: 'updated' } });
  expect(git(repo, 'rev-parse', `${result.commit}^`)).toBe(crashed);
  expect(read(repo, 'src/math.js')).toBe(FIX);
  expect(read(repo, 'NOTES.md')).toBe('notes\n');
  expect(git(repo, 'status', '--porcelain')).toBe('');
});

test('a checkout caught mid-update by another effect that moved the target is retried on the new tip, not refused as dirty', async () => {
  const a = await run({ 'src/math.js': FIX });
  const b = await run({ 'NOTES.md': 'notes\n' });
  const real = checkout.requireUpdatable;
  // The interleaving the race test hits now and then: b read the target's tip, then effect a moved
  // the target and is writing its files into the checkout (files first, index last) as b looks.
  const spy = jest.spyOn(checkout, 'requireUpdatable').mockImplementationOnce(async (...args) => {
    await landAsEffect(a);
    writeFileSync(path.join(repo, 'src/math.js'), FIX);
    return real(...args);
  });
  try {
    const first = await effect(b).then(
      () => 'landed',
      (err: unknown) => err,
    );
    // Not a non-retryable ApplicationFailure ("uncommitted changes"): a retryable error, nothing changed.
    expect(first).toBeInstanceOf(Error);
    expect(first).not.toBeInstanceOf(ApplicationFailure);
    expect((first as Error).message).toMatch(/main moved while the effect .* checked its checkout/);
    const result = await retried(() => effect(b));
    expect(git(repo, 'rev-parse', `${result.commit}^`)).toBe(git(repo, 'rev-parse', 'main^'));
    expect(withKey('main', b.key)).toEqual([result.commit]);
    expect(read(repo, 'src/math.js')).toBe(FIX);
    expect(read(repo, 'NOTES.md')).toBe('notes\n');
    expect(git(repo, 'status', '--porcelain')).toBe('');
  } finally {
    spy.mockRestore();
  }
});

test("a checkout whose index another git holds locked as the effect checks it fails for a retry, not as someone's work, and lands once the lock is gone", async () => {
  const b = await run({ 'NOTES.md': 'notes\n' });
  const lock = path.join(repo, '.git', 'index.lock');
  const real = checkout.requireUpdatable;
  // Another effect's `git status` or update holding the checkout's index as this one looks.
  const spy = jest.spyOn(checkout, 'requireUpdatable').mockImplementationOnce(async (...args) => {
    writeFileSync(lock, '');
    try {
      return await real(...args);
    } finally {
      rmSync(lock);
    }
  });
  try {
    const first = await effect(b).then(
      () => 'landed',
      (err: unknown) => err,
    );
    expect(first).toBeInstanceOf(Error);
    expect(first).not.toBeInstanceOf(ApplicationFailure);
    expect((first as Error).message).toMatch(/index\.lock/);
    expect(withKey('main', b.key)).toEqual([]);
    const result = await retried(() => effect(b));
    expect(withKey('main', b.key)).toEqual([result.commit]);
    expect(read(repo, 'NOTES.md')).toBe('notes\n');
    expect(git(repo, 'status', '--porcelain')).toBe('');
  } finally {
    spy.mockRestore();
  }
});

test.each([1, 2, 3])(
  'two tries of the same effect at once land one commit and report it both times (round %i)',
  async () => {
    const r = await run({ 'src/math.js': FIX });
    const [one, two] = await Promise.all([retried(() => effect(r)), retried(() => effect(r))]);
    expect(one.commit).toBe(two.commit);
    expect([one.alreadyApplied, two.alreadyApplied].filter((x) => !x)).toHaveLength(1);
    expect(withKey('main', r.key)).toEqual([one.commit]);
    expect(git(repo, 'rev-parse', 'main')).toBe(one.commit);
    expect(read(repo, 'src/math.js')).toBe(FIX);
    expect(git(repo, 'status', '--porcelain')).toBe('');
  },
);

test.each([1, 2, 3])(
  'two effects at once on the checked-out target both land, each once, and the checkout is clean (round %i)',
  async () => {
    const a = await run({ 'src/math.js': FIX });
    const b = await run({ 'NOTES.md': 'notes\n' });
    const [ra, rb] = await Promise.all([retried(() => effect(a)), retried(() => effect(b))]);
    expect(withKey('main', a.key)).toEqual([ra.commit]);
    expect(withKey('main', b.key)).toEqual([rb.commit]);
    expect(git(repo, 'rev-list', '--count', 'main')).toBe('3');
    expect(read(repo, 'src/math.js')).toBe(FIX);
    expect(read(repo, 'NOTES.md')).toBe('notes\n');
    expect(git(repo, 'status', '--porcelain')).toBe('');
  },
);
