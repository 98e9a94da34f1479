import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { type ApplicationFailure } from '@temporalio/common';
import type { Autonomy } from '../../common/loop-spec';
import { initBorrowingRepository } from '../git/borrowing-repository';
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
 * The folder of an L2 run's workspace under `worktreesDir`, named by its branch: the run's own
 * repository and working tree (a linked worktree of the repository for runs started before
 * each run got a repository of its own).
 */
export function runRoot(worktreesDir: string, branch: string): string {
  return path.join(worktreesDir, branch.replace(/\//g, '_'));
}

/** The ref of a run's own repository that holds the commit its branch started from. */
export const BASE_REF = 'refs/loopwright/base';

/**
 * The run's own repository at `root` (its `.git` is a folder the worker made), or undefined for
 * a linked worktree of the target repository (a run started before runs had their own) or none.
 */
export function ownRepository(root: string): string | undefined {
  const st = lstatSync(path.join(root, '.git'), { throwIfNoEntry: false });
  return st?.isDirectory() ? root : undefined;
}

/**
 * Where a run's agent works. L1 and L3 work in the given folder (L3 in a repository of its own
 * too when the loop delivers a git commit, which is made from the run's branch). L2 works in a
 * git repository of its own on a fresh branch `loopwright/<run>` made from the repository's HEAD,
 * under `worktreesDir`; the repository's own working tree, refs and objects are never touched.
 *
 * The run's repository borrows the target repository's objects (`objects/info/alternates` names
 * its object store, which the sandbox mounts read-only, alone: none of the target's refs, logs or
 * worktrees) and keeps everything the run writes in its own: attempt commits, snapshots, the
 * gate's trees and checkouts, its index, refs and reflogs. Another run's sandbox sees none of
 * it; only an approved change's objects reach the target, when the effect lands it (effects.ts).
 *
 * Idempotent and crash-safe: the repository is made and checked out in a staging folder that is
 * renamed to its place once complete, so a retry finds either nothing (and starts over) or the
 * whole repository. A run started before this (a linked worktree at its folder) goes on there.
 * Every git command goes through workerGit: no hook, filter or other program of the repository runs.
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
    throw setupError(`workspace ${folder} is not a git repository: an L2 run works on a branch of its own repository`);
  });
  const branch = runBranch(input.workflowId);
  const root = runRoot(worktreesDir, branch);
  if (ownRepository(root)) {
    await checkOut(root);
    return { root: realpathSync(root), branch, base: trim(await workerGit(root, ['rev-parse', '--verify', BASE_REF])) };
  }
  if (existsSync(path.join(root, '.git'))) {
    // A linked worktree of a run started before runs had repositories of their own.
    await checkOut(root);
    const base = trim(await workerGit(top, ['merge-base', `refs/heads/${branch}`, 'HEAD']));
    return { root: realpathSync(root), branch, base };
  }
  mkdirSync(worktreesDir, { recursive: true });
  await makeRunRepository(top, root, branch);
  return { root: realpathSync(root), branch, base: trim(await workerGit(root, ['rev-parse', '--verify', BASE_REF])) };
}

/**
 * Makes the run's repository at `root`: `git init` (no template: no hooks, not even samples) with
 * the target's object format, the target's object store as its alternate, the target's content
 * settings, ignore and attribute rules (`info/exclude`, `info/attributes`), the branch and
 * {@link BASE_REF} at the target's HEAD, checked out; built in a staging folder beside `root`
 * and renamed to it. A staging folder a crash left is removed by a later try.
 */
async function makeRunRepository(top: string, root: string, branch: string): Promise<void> {
  const head = await workerGit(top, ['rev-parse', '--verify', 'HEAD^{commit}']).then(trim, () => {
    throw setupError(`the repository ${top} has no commit at HEAD: an L2 run's branch starts from one`);
  });
  const parent = path.dirname(root);
  const prefix = `.${path.basename(root)}.new-`;
  // A staging folder an hour old is a crashed try's (a live one takes seconds): removed. A younger
  // one may be a concurrent try's (an activity retried after a timeout while it still runs).
  for (const stale of readdirSync(parent).filter((n) => n.startsWith(prefix))) {
    const at = path.join(parent, stale);
    if ((lstatSync(at, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) < Date.now() - 3_600_000)
      rmSync(at, { recursive: true, force: true });
  }
  const staging = mkdtempSync(path.join(parent, prefix));
  try {
    await initBorrowingRepository(top, staging, branch);
    const identity = { env: { ...LOOPWRIGHT_IDENTITY } };
    await workerGit(
      staging,
      ['update-ref', '-m', 'loopwright: the run starts', `refs/heads/${branch}`, head],
      identity,
    );
    await workerGit(staging, ['update-ref', '-m', 'loopwright: the run starts', BASE_REF, head], identity);
    await checkOut(staging);
    renameSync(staging, root);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    // Another try of this activity made it first: that one is the run's.
    if (ownRepository(root)) return;
    throw err;
  }
}

/** Writes a new repository's or worktree's files and index from its HEAD, unless that was done (a retry). */
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
