import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { commitWorkspace, prepareWorkspace } from '../../../activities/agent/workspace';
import { runDiffPolicyCheck } from '../../../activities/checks/diff-policy';
import { workerGit } from '../../../activities/git/worker-git';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import { createHostileRepo, type HookPlace, type HostileRepo, removeHostileRepos } from './hostile-repo';

/**
 * A run's whole life in its workspace, on a repository pre-seeded with hostile hooks and config
 * (see hostile-repo.ts): the worktree is made, the agent's tools look at it, the diff policy
 * checks it and the attempt is committed, and not one hostile program runs, while each step
 * still does its job. Each hostile program would have seen the worker's secret.
 */
const FIX =
  '/** Adds two numbers. */\nfunction add(a, b) {\n  return a + b;\n}\n\n/** Multiplies two numbers. */\nfunction multiply(a, b) {\n  return a * b;\n}\n\nmodule.exports = { add, multiply };\n';
const REGRESSION = "\ntest('add adds negatives', () => {\n  assert.strictEqual(add(-1, -1), -2);\n});\n";

let hostile: HostileRepo;
let worktrees: string;
const saved = process.env.LW_TEST_SECRET_TOKEN;

beforeEach(() => {
  process.env.LW_TEST_SECRET_TOKEN = 'sk-lw-secret';
  worktrees = mkdtempSync(path.join(tmpdir(), 'lw-hostile-worktrees-'));
});
afterAll(removeHostileRepos);
afterEach(() => {
  if (saved === undefined) delete process.env.LW_TEST_SECRET_TOKEN;
  else process.env.LW_TEST_SECRET_TOKEN = saved;
  rmSync(worktrees, { recursive: true, force: true });
});

const git = async (cwd: string, ...args: string[]) => (await workerGit(cwd, args)).trim();
const blob = (cwd: string, rev: string) => workerGit(cwd, ['cat-file', 'blob', rev]);

describe.each(['.git/hooks', 'core.hooksPath'] as HookPlace[])(
  'a repository with hostile hooks (in %s) and config',
  (place) => {
    beforeEach(() => {
      hostile = createHostileRepo(place);
    });

    test('prepareWorkspace makes the worktree with the committed bytes, running nothing of the repository', async () => {
      const ws = await prepareWorkspace(worktrees, {
        workflowId: 'fix-test/hostile-1',
        workspace: hostile.repo,
        autonomy: 'L2',
      });
      expect(ws.branch).toBe('loopwright/fix-test-hostile-1');
      expect(ws.base).toBe(await git(hostile.repo, 'rev-parse', 'HEAD'));
      // No smudge filter ran: the files are exactly the committed blobs.
      for (const file of ['src/math.js', 'package.json', '.gitattributes'])
        expect(readFileSync(path.join(ws.root, file), 'utf8')).toBe(await blob(hostile.repo, `HEAD:${file}`));
      expect(await git(ws.root, 'status', '--porcelain', '--ignore-submodules=dirty')).toBe('');
      // A retry finds the worktree it made.
      expect(
        await prepareWorkspace(worktrees, {
          workflowId: 'fix-test/hostile-1',
          workspace: hostile.repo,
          autonomy: 'L2',
        }),
      ).toEqual(ws);
      expect(hostile.ran()).toBe('');
    });

    test('a retry after a crash between `worktree add` and the checkout finishes the checkout', async () => {
      const root = path.join(worktrees, 'loopwright_fix-test-hostile-2');
      await workerGit(hostile.repo, [
        'worktree',
        'add',
        '--no-checkout',
        '-b',
        'loopwright/fix-test-hostile-2',
        root,
        'HEAD',
      ]);
      const ws = await prepareWorkspace(worktrees, {
        workflowId: 'fix-test/hostile-2',
        workspace: hostile.repo,
        autonomy: 'L2',
      });
      expect(readFileSync(path.join(ws.root, 'src/math.js'), 'utf8')).toBe(
        await blob(hostile.repo, 'HEAD:src/math.js'),
      );
      expect(await git(ws.root, 'status', '--porcelain')).toBe('');
      expect(hostile.ran()).toBe('');
    });

    test('git_diff and git_status show the agent its changes, running nothing of the repository', async () => {
      const ws = await prepareWorkspace(worktrees, {
        workflowId: 'fix-test/hostile-3',
        workspace: hostile.repo,
        autonomy: 'L2',
      });
      writeFileSync(path.join(ws.root, 'src/math.js'), FIX);
      writeFileSync(path.join(ws.root, 'notes.txt'), 'new\n');
      const registry = createToolRegistry();
      const ctx = { root: ws.root, allowedCommands: [], commandTimeoutMs: 10_000, outputCapChars: 20_000 };
      const diff = await executeTool(registry, 'git_diff', {}, ctx);
      expect(diff.isError).toBe(false);
      expect(diff.content).toContain('-  return a - b;\n+  return a + b;');
      expect(diff.content).toMatch(/untracked files:\n {2}notes\.txt$/);
      expect(await executeTool(registry, 'git_status', {}, ctx)).toEqual({
        content: '## loopwright/fix-test-hostile-3\n M src/math.js\n?? notes.txt',
        isError: false,
      });
      expect(hostile.ran()).toBe('');
    });

    test('the diff policy checks the change and commitWorkspace commits exactly that tree, running nothing of the repository', async () => {
      const ws = await prepareWorkspace(worktrees, {
        workflowId: 'fix-test/hostile-4',
        workspace: hostile.repo,
        autonomy: 'L2',
      });
      writeFileSync(path.join(ws.root, 'src/math.js'), FIX);
      writeFileSync(
        path.join(ws.root, 'test/math.test.js'),
        readFileSync(path.join(ws.root, 'test/math.test.js'), 'utf8') + REGRESSION,
      );
      const verdict = await runDiffPolicyCheck({
        check: { kind: 'diff', name: 'change policy', allowedPaths: ['src/', 'test/'], requireRegressionTest: true },
        root: ws.root,
        baseRef: ws.base!,
      });
      expect(verdict).toMatchObject({ passed: true, failedItems: [] });
      expect(verdict.reason).toContain('2 files changed');

      const message = 'loopwright: attempt 1 of fix-test/hostile-4';
      const { commit } = await commitWorkspace({ root: ws.root, branch: ws.branch!, message });
      expect(commit).toMatch(/^[0-9a-f]{40}$/);
      expect(await git(ws.root, 'rev-parse', `refs/heads/${ws.branch}`)).toBe(commit);
      expect(await git(ws.root, 'rev-parse', `${commit}^`)).toBe(ws.base);
      // The committed bytes are the agent's, untouched by any clean filter; unsigned; by Loopwright.
      expect(await blob(ws.root, `${commit}:src/math.js`)).toBe(FIX);
      const raw = await git(ws.root, 'cat-file', 'commit', commit!);
      expect(raw).toMatch(/^author Loopwright <loopwright@localhost> /m);
      expect(raw).not.toContain('gpgsig');
      expect(raw.endsWith(message)).toBe(true);
      expect(await git(ws.root, 'status', '--porcelain')).toBe('');
      // A retry of the activity after the branch moved returns the same commit; nothing left: null.
      expect(await commitWorkspace({ root: ws.root, branch: ws.branch!, message })).toEqual({ commit });
      expect(
        await commitWorkspace({
          root: ws.root,
          branch: ws.branch!,
          message: 'loopwright: attempt 2 of fix-test/hostile-4',
        }),
      ).toEqual({ commit: null });
      expect(hostile.ran()).toBe('');
    });
  },
);
