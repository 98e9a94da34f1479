import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { commitWorkspace, prepareWorkspace } from '../../../activities/agent/workspace';
import { applyGitCommit } from '../../../activities/effects';
import { bringObjects, landingObjects } from '../../../activities/git/land';
import { commitTree, moveRef, treeOf } from '../../../activities/git/commit-tree';
import { snapshotWorkingTree } from '../../../activities/git/snapshot';
import { workerGit } from '../../../activities/git/worker-git';
import { createHostileRepo, type HookPlace, type HostileRepo, removeHostileRepos } from './hostile-repo';

/**
 * The approved effect on a repository pre-seeded with hostile hooks and config: the run's
 * branch lands as one squashed commit (checked-out target, another branch, a target that moved
 * so merge-tree runs), conflicts and unusable checkouts are refused with nothing changed, and a
 * crash between the ref move and the checkout update is finished by the retry (or, when someone
 * edited the files since, left alone and reported). No hostile program runs in any of it.
 */
const FIX =
  '/** Adds two numbers. */\nfunction add(a, b) {\n  return a + b;\n}\n\n/** Multiplies two numbers. */\nfunction multiply(a, b) {\n  return a * b;\n}\n\nmodule.exports = { add, multiply };\n';

let hostile: HostileRepo;
let worktrees: string;
let branch: string;
/** The run's own repository, where its branch is (see prepareWorkspace). */
let root: string;
let n = 0;

const git = async (cwd: string, ...args: string[]) => (await workerGit(cwd, args)).trim();
const read = (file: string) => readFileSync(path.join(hostile.repo, file), 'utf8');
const status = () => git(hostile.repo, 'status', '--porcelain', '--ignore-submodules=dirty');
const effect = (over: { targetBranch?: string; key?: string } = {}) =>
  applyGitCommit(
    {
      key: over.key ?? `fix-test/hostile-${n}/commit/1`,
      repo: hostile.repo,
      branch,
      message: 'Fix add',
      targetBranch: over.targetBranch,
    },
    worktrees,
  );

/** A hostile repository whose run's branch holds the fix, committed by commitWorkspace. */
async function setUp(place: HookPlace): Promise<void> {
  hostile = createHostileRepo(place);
  n += 1;
  const ws = await prepareWorkspace(worktrees, {
    workflowId: `fix-test/hostile-${n}`,
    workspace: hostile.repo,
    autonomy: 'L2',
  });
  writeFileSync(path.join(ws.root, 'src/math.js'), FIX);
  await commitWorkspace({
    root: ws.root,
    branch: ws.branch!,
    message: `loopwright: attempt 1 of fix-test/hostile-${n}`,
  });
  branch = ws.branch!;
  root = ws.root;
}

/** Commits `files` onto main in the user's checkout, by plumbing, and leaves the checkout clean. */
async function commitOnMain(files: Record<string, string>): Promise<string> {
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(hostile.repo, file), text);
  const head = await git(hostile.repo, 'rev-parse', 'HEAD');
  const commit = await commitTree(
    hostile.repo,
    await snapshotWorkingTree(hostile.repo),
    [head],
    'a teammate moves main',
  );
  await moveRef(hostile.repo, 'refs/heads/main', commit, head, 'test');
  await workerGit(hostile.repo, ['read-tree', '--reset', 'HEAD']);
  return commit;
}

beforeEach(() => {
  process.env.LW_TEST_SECRET_TOKEN = 'sk-lw-secret';
  worktrees = mkdtempSync(path.join(tmpdir(), 'lw-hostile-effect-'));
});
afterAll(removeHostileRepos);
afterEach(() => {
  delete process.env.LW_TEST_SECRET_TOKEN;
  rmSync(worktrees, { recursive: true, force: true });
});

describe.each(['.git/hooks', 'core.hooksPath'] as HookPlace[])(
  'applyGitCommit on a repository with hostile hooks (in %s) and config',
  (place) => {
    beforeEach(() => setUp(place));

    test('the checked-out target gets one squashed commit and a clean checkout holding the fix; a retry applies nothing', async () => {
      const before = await git(hostile.repo, 'rev-parse', 'HEAD');
      const result = await effect();
      expect(result).toMatchObject({
        target: 'main',
        alreadyApplied: false,
        checkout: { path: realpathSync(hostile.repo), state: 'updated' },
      });
      expect(await git(hostile.repo, 'rev-parse', 'main')).toBe(result.commit);
      expect(await git(hostile.repo, 'rev-parse', `${result.commit}^`)).toBe(before);
      expect(await treeOf(hostile.repo, result.commit)).toBe(await treeOf(root, branch));
      expect(await git(hostile.repo, 'log', '-1', '--format=%B', 'main')).toBe(
        `Fix add\n\nLoopwright-Effect: fix-test/hostile-${n}/commit/1`,
      );
      expect(await git(hostile.repo, 'cat-file', 'commit', result.commit)).not.toContain('gpgsig');
      expect(read('src/math.js')).toBe(FIX);
      expect(await status()).toBe('');
      expect(await effect()).toEqual({ ...result, alreadyApplied: true });
      expect(await git(hostile.repo, 'rev-list', '--count', 'main')).toBe('3');
      expect(hostile.ran()).toBe('');
    });

    test('a target that is not checked out moves by compare-and-swap and the checkout is not touched', async () => {
      const main = await git(hostile.repo, 'rev-parse', 'main');
      await workerGit(hostile.repo, ['update-ref', 'refs/heads/release', main]);
      const result = await effect({ targetBranch: 'release' });
      expect(result).toEqual({ target: 'release', commit: expect.any(String), alreadyApplied: false });
      expect(await git(hostile.repo, 'rev-parse', 'release')).toBe(result.commit);
      expect(await git(hostile.repo, 'rev-parse', 'main')).toBe(main);
      expect(read('src/math.js')).toContain('return a - b;');
      expect(await status()).toBe('');
      expect(hostile.ran()).toBe('');
    });

    test('a target that moved since the branch forked gets a real 3-way merge (merge-tree)', async () => {
      const moved = await commitOnMain({ 'README.md': 'teammate\n' });
      const result = await effect();
      expect(await git(hostile.repo, 'rev-parse', `${result.commit}^`)).toBe(moved);
      expect(await git(hostile.repo, 'rev-list', '--parents', '-1', result.commit)).toBe(`${result.commit} ${moved}`);
      expect(read('README.md')).toBe('teammate\n');
      expect(read('src/math.js')).toBe(FIX);
      expect(await status()).toBe('');
      expect(hostile.ran()).toBe('');
    });
  },
);

describe('applyGitCommit refuses with nothing changed, and finishes what a crash left', () => {
  beforeEach(() => setUp('.git/hooks'));

  test('a change to the same file on both sides is a conflict: the repository merge driver does not run', async () => {
    const moved = await commitOnMain({ 'src/math.js': `${read('src/math.js')}// teammate\n` });
    await expect(effect()).rejects.toMatchObject({
      type: 'EffectError',
      nonRetryable: true,
      message: expect.stringContaining('conflicts with main in src/math.js'),
    });
    expect(await git(hostile.repo, 'rev-parse', 'main')).toBe(moved);
    expect(await status()).toBe('');
    expect(hostile.ran()).toBe('');
  });

  test('uncommitted changes, or an untracked file where the fix adds one, refuse the effect', async () => {
    const main = await git(hostile.repo, 'rev-parse', 'main');
    writeFileSync(path.join(hostile.repo, 'package.json'), '{}\n');
    await expect(effect()).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining('has uncommitted changes (M package.json'),
    });
    await workerGit(hostile.repo, ['checkout', '--', 'package.json']);
    // The branch adds NEW.md; the user has an untracked NEW.md of their own.
    writeFileSync(path.join(root, 'NEW.md'), 'from the run\n');
    await commitWorkspace({ root, branch, message: 'adds NEW.md' });
    writeFileSync(path.join(hostile.repo, 'NEW.md'), 'mine\n');
    await expect(effect()).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining("Untracked working tree file 'NEW.md' would be overwritten"),
    });
    expect(await git(hostile.repo, 'rev-parse', 'main')).toBe(main);
    expect(read('NEW.md')).toBe('mine\n');
    expect(hostile.ran()).toBe('');
  });

  /** The state a worker killed right after `update-ref` leaves: main moved, index and files at the parent. */
  async function crashAfterRefMove(): Promise<{ parent: string; commit: string }> {
    const parent = await git(hostile.repo, 'rev-parse', 'main');
    // The effect's own steps: the run's tree, its objects brought into the repository, one commit.
    const tree = await treeOf(root, branch);
    const objects = await landingObjects(hostile.repo, root);
    try {
      await bringObjects(hostile.repo, tree, parent, objects.env);
    } finally {
      await objects.remove();
    }
    const commit = await commitTree(
      hostile.repo,
      tree,
      [parent],
      `Fix add\n\nLoopwright-Effect: fix-test/hostile-${n}/commit/1`,
    );
    await moveRef(hostile.repo, 'refs/heads/main', commit, parent, 'test');
    return { parent, commit };
  }

  test('after a crash between the ref move and the checkout update, the retry finishes the update (keeping an unrelated edit)', async () => {
    const { commit } = await crashAfterRefMove();
    writeFileSync(path.join(hostile.repo, 'package.json'), '{ "edited": "by the user since" }\n');
    expect(await effect()).toEqual({
      target: 'main',
      commit,
      alreadyApplied: true,
      checkout: { path: realpathSync(hostile.repo), state: 'updated' },
    });
    expect(read('src/math.js')).toBe(FIX);
    expect(await status()).toBe('M package.json');
    expect(hostile.ran()).toBe('');
  });

  test('after a crash in the middle of writing files, the retry accepts the files it wrote and finishes', async () => {
    const { commit } = await crashAfterRefMove();
    writeFileSync(path.join(hostile.repo, 'src/math.js'), FIX);
    expect(await effect()).toEqual({
      target: 'main',
      commit,
      alreadyApplied: true,
      checkout: { path: realpathSync(hostile.repo), state: 'updated' },
    });
    expect(read('src/math.js')).toBe(FIX);
    expect(await status()).toBe('');
    expect(hostile.ran()).toBe('');
  });

  test('a half-updated checkout where someone edited a file the commit changes is left alone, and the result says so', async () => {
    const { commit } = await crashAfterRefMove();
    writeFileSync(path.join(hostile.repo, 'src/math.js'), 'someone else\n');
    const index = readFileSync(path.join(hostile.repo, '.git', 'index'));
    expect(await effect()).toEqual({
      target: 'main',
      commit,
      alreadyApplied: true,
      checkout: {
        path: realpathSync(hostile.repo),
        state: 'left',
        note: expect.stringContaining('has local changes to src/math.js'),
      },
    });
    expect(readFileSync(path.join(hostile.repo, '.git', 'index')).equals(index)).toBe(true);
    expect(read('src/math.js')).toBe('someone else\n');
    expect(existsSync(path.join(hostile.repo, 'src/math.js'))).toBe(true);
    expect(hostile.ran()).toBe('');
  });
});
