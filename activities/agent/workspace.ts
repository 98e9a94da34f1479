import { existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { type ApplicationFailure } from '@temporalio/common';
import type { Autonomy } from '../../common/loop-spec';
import { commitTree, messageOf, moveRef, resolveCommit, treeOf } from '../git/commit-tree';
import { LOOPWRIGHT_IDENTITY } from '../git/git-env';
import { snapshotWorkingTree } from '../git/snapshot';
import { workerGit } from '../git/worker-git';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';

const trim = (out: string) => out.trim();

const setupError = (message: string): ApplicationFailure => nonRetryableFailure(FailureType.Workspace, message);

/** The branch an L2 run works on. */
export function runBranch(workflowId: string): string {
  return `loopwright/${workflowId.replace(/[^A-Za-z0-9._/-]+/g, '-').replace(/\/+/g, '-')}`;
}

/**
 * Where a run's agent works. L1 and L3 work in the given folder (L3 in a worktree too when the
 * loop delivers a git commit, which is made from the run's branch). L2 works in an isolated git
 * worktree on a fresh branch `loopwright/<run>` made from the repository's HEAD, under
 * `worktreesDir`; the repository's own working tree is never touched. Idempotent: a retry
 * finds the worktree it made (and checks it out if a crash came before that). Every git command
 * goes through workerGit: no hook, filter or other program of the repository runs.
 */
export async function prepareWorkspace(
  worktreesDir: string,
  input: { workflowId: string; workspace: string; autonomy: Autonomy; isolate?: boolean },
): Promise<{ root: string; branch: string | null; base: string | null }> {
  if (!existsSync(input.workspace) || !statSync(input.workspace).isDirectory()) {
    throw setupError(
      `workspace ${input.workspace} is not a folder on this worker: give an existing folder (shared by all workers)`,
    );
  }
  const folder = realpathSync(input.workspace);
  if (input.autonomy !== 'L2' && !input.isolate)
    return { root: folder, branch: null, base: await workerGit(folder, ['rev-parse', 'HEAD']).then(trim, () => null) };
  const top = await workerGit(folder, ['rev-parse', '--show-toplevel']).then(trim, () => {
    throw setupError(`workspace ${folder} is not a git repository: an L2 run works on a branch in a git worktree`);
  });
  const branch = runBranch(input.workflowId);
  const root = path.join(worktreesDir, branch.replace(/\//g, '_'));
  if (existsSync(path.join(root, '.git'))) {
    await checkOut(root);
    const base = trim(await workerGit(top, ['merge-base', `refs/heads/${branch}`, 'HEAD']));
    return { root: realpathSync(root), branch, base };
  }
  mkdirSync(worktreesDir, { recursive: true });
  const exists = (await resolveCommit(top, `refs/heads/${branch}`)) !== undefined;
  // --no-checkout: the files are written by read-tree below, run in the new worktree itself, so
  // the drivers neutralized are those of its own config (an includeIf "onbranch:" can differ).
  const add = exists
    ? ['worktree', 'add', '--no-checkout', root, branch]
    : ['worktree', 'add', '--no-checkout', '-b', branch, root, 'HEAD'];
  await workerGit(top, add, { env: { ...LOOPWRIGHT_IDENTITY } });
  await checkOut(root);
  return { root: realpathSync(root), branch, base: trim(await workerGit(root, ['rev-parse', 'HEAD'])) };
}

/** Writes a new worktree's files and index from its HEAD, unless that was done (a retry). */
async function checkOut(root: string): Promise<void> {
  const index = path.resolve(root, trim(await workerGit(root, ['rev-parse', '--git-path', 'index'])));
  if (!existsSync(index)) await workerGit(root, ['read-tree', '--reset', '-u', 'HEAD']);
}

/**
 * Commits what an L2 attempt changed onto the run's branch (one commit per attempt with
 * changes), so the work is reviewable and lands nowhere else. Returns the commit, or null when
 * the attempt changed nothing. The commit is made from the tree of the working state (the same
 * snapshot the diff policy checks), by plumbing: `commit-tree` as Loopwright, unsigned, then
 * `update-ref` from the branch's tip (compare-and-swap), then the worktree's index is reset to
 * the new commit without touching the files, so `git status` is clean. No hook, editor or
 * program of the repository runs. Idempotent: a retry after the branch moved finds the commit by
 * its message (unique per attempt and run) and returns it.
 */
export async function commitWorkspace(input: {
  root: string;
  branch: string;
  message: string;
}): Promise<{ commit: string | null }> {
  const ref = `refs/heads/${input.branch}`;
  const tip = await resolveCommit(input.root, ref);
  if (!tip)
    throw setupError(
      `the run's branch ${input.branch} does not exist in ${input.root}: its worktree was removed or damaged`,
    );
  if ((await messageOf(input.root, tip)).trimEnd() === input.message.trimEnd()) {
    await resetIndex(input.root, tip);
    return { commit: tip };
  }
  const tree = await snapshotWorkingTree(input.root, tip);
  if (tree === (await treeOf(input.root, tip))) return { commit: null };
  const commit = await commitTree(input.root, tree, [tip], input.message);
  await moveRef(input.root, ref, commit, tip, `loopwright: ${input.message}`);
  await resetIndex(input.root, commit);
  return { commit };
}

/** The worktree's index becomes `commit`'s tree; files are not touched, stat data kept where it still holds. */
async function resetIndex(root: string, commit: string): Promise<void> {
  await workerGit(root, ['read-tree', '--reset', commit]);
}
