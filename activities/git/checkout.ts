import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resolveCommit } from './commit-tree';
import { GitError, workerGit } from './worker-git';

/**
 * Moving the branch checked out in a person's repository from `parent` to `commit` (a commit
 * whose first parent is `parent`) and bringing their index and files along, in two steps that
 * can each be finished by a retry: the ref moves first (compare-and-swap), then
 * `read-tree -m -u parent commit` updates the index and working tree as a checkout would.
 */

/** Why the checkout cannot be updated, for the caller to report (nothing has been changed). */
export class CheckoutBlockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Throws CheckoutBlockedError when the checkout at `top` has uncommitted changes to tracked
 * files, or when updating it to `commit` would fail (an untracked file in the way): checked
 * before the ref moves, so a refusal leaves everything as it was.
 */
export async function requireUpdatable(top: string, parent: string, commit: string): Promise<void> {
  const dirty = await workerGit(top, ['status', '--porcelain', '--untracked-files=no', '--ignore-submodules=dirty']);
  if (dirty.trim()) throw new CheckoutBlockedError(`the working tree of ${top} has uncommitted changes (${dirty.trim().split('\n')[0].trim()} …)`);
  await workerGit(top, ['read-tree', '-n', '-m', '-u', parent, commit]).catch((err: unknown) => {
    throw new CheckoutBlockedError(`its checkout at ${top} cannot be updated: ${err instanceof GitError ? err.reason : String(err)}`);
  });
}

/** Updates the index and files of the checkout at `top` from `parent` to `commit` (after the ref moved). */
export async function updateCheckout(top: string, parent: string, commit: string): Promise<void> {
  await workerGit(top, ['read-tree', '-m', '-u', parent, commit]);
}

/**
 * Finishes an update a crash interrupted, when HEAD at `top` is `commit` but the index still
 * holds its first parent's tree; does nothing when the index already holds `commit` or anything
 * else (someone has worked in the checkout since, and it is theirs). When the crash came in the
 * middle of writing files, the files it wrote hold `commit`'s content: they are accepted, and
 * the update is finished with `read-tree --reset -u`; any other local change to a path the
 * commit touches throws CheckoutBlockedError, so no one's work is overwritten.
 */
export async function finishCheckout(top: string, commit: string): Promise<void> {
  if ((await resolveCommit(top, 'HEAD')) !== commit) return;
  const parent = await resolveCommit(top, `${commit}^1`);
  if (!parent || (await indexHolds(top, commit)) || !(await indexHolds(top, parent))) return;
  try {
    await updateCheckout(top, parent, commit);
    return;
  } catch {
    // files the crashed update wrote count as local changes: look at each
  }
  const changed = new Set(nulSplit(await workerGit(top, ['diff-tree', '-r', '-z', '--name-only', '--no-renames', parent, commit])));
  const sinceParent = await worktreeChanges(top);
  const sinceCommit = await worktreeChanges(top, commit);
  const strays = [...sinceParent]
    .filter(([file, xy]) => (changed.has(file) ? sinceCommit.has(file) : xy !== '??'))
    .map(([file]) => file);
  if (strays.length > 0) {
    throw new CheckoutBlockedError(`its checkout at ${top} is between ${parent.slice(0, 12)} and ${commit.slice(0, 12)} and has local changes to ${strays.slice(0, 10).join(', ')}: finish it by hand`);
  }
  await workerGit(top, ['read-tree', '--reset', '-u', commit]);
}

/** True when the index at `top` holds exactly `commit`'s tree. */
async function indexHolds(top: string, commit: string): Promise<boolean> {
  return workerGit(top, ['diff-index', '--cached', '--quiet', '--ignore-submodules=dirty', commit, '--']).then(
    () => true,
    (err: unknown) => {
      if (err instanceof GitError && err.exitCode === 1) return false;
      throw err;
    },
  );
}

/**
 * Paths whose file differs from the index (`XY` status codes, `??` untracked): the real index,
 * or, given `commit`, a temporary index holding `commit`'s tree (so: differs from `commit`).
 */
async function worktreeChanges(top: string, commit?: string): Promise<Map<string, string>> {
  const dir = commit ? await mkdtemp(path.join(os.tmpdir(), 'loopwright-checkout-')) : undefined;
  const indexFile = dir ? path.join(dir, 'index') : undefined;
  try {
    if (commit) await workerGit(top, ['read-tree', commit], { indexFile });
    const out = await workerGit(top, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=dirty'], { indexFile });
    const changes = new Map<string, string>();
    for (const entry of nulSplit(out)) {
      const xy = entry.slice(0, 2);
      if (xy === '??' || xy[1] !== ' ') changes.set(entry.slice(3), xy);
    }
    return changes;
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

function nulSplit(out: string): string[] {
  return out.split('\0').filter(Boolean);
}
