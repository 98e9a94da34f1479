import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { markOwner, sweepLeftBehind } from '../../server/left-behind';
import { privateFolder, workerTmpDir } from '../../server/private-folder';
import { realOrSelf } from '../sandbox/real-path';
import { initBorrowingRepository } from './borrowing-repository';
import { inObjectScope, objectScopeAt } from './object-scope';
import { alternateChain } from './read-only-stores';
import { repositoryDirs } from './worker-git';

/** Where each private store names the worker process it belongs to (server/left-behind.ts). */
const ownerFile = (store: string) => path.join(store, '.git', 'loopwright-owner');

/**
 * Runs `fn` with every object the worker's git writes for the repository at `root` (while `fn`
 * runs, in commands whose working directory is `root`) kept in a private store instead of the
 * repository's: a repository of the worker's own (private-folder.ts, under `<tmp>/loopwright/objects`,
 * which no sandbox mounts) that borrows `root`'s objects and is removed when `fn` is done.
 * workerGit applies it (object-scope.ts), so every command of `fn` in `root`, reader or writer,
 * sees the repository's objects and the private ones; a gate checkout made meanwhile is a
 * worktree of the private repository (checks/tests/trees.ts). Every git command of the worker
 * while `fn` runs sees the borrowed stores read-only (read-only-stores.ts): git freshens the
 * mtime of an object it would write that a borrowed store holds, which an L2 agent could read.
 *
 * The checks use it for what they hash and throw away (snapshots of the working state, the
 * gate's trees, blobs and checkout commits). A run in place works in the target repository
 * itself, whose object store every L2 run's repository borrows and its sandbox mounts: a
 * snapshot written there (untracked files like a `.env` included) was readable by any later
 * L2 agent. Nothing of a check outlives its activity, so a retry starts afresh, whatever worker
 * it lands on. `root` outside a git repository: `fn` runs as it is (and fails its own way).
 */
export async function withPrivateObjects<T>(root: string, fn: () => Promise<T>): Promise<T> {
  if (objectScopeAt(root) || !(await repositoryDirs(root))) return fn();
  const parent = privateFolder(workerTmpDir('objects'));
  sweepLeftBehind(parent, 'store-', ownerFile);
  const dir = await mkdtemp(path.join(parent, 'store-'));
  try {
    await initBorrowingRepository(root, dir);
    markOwner(ownerFile(dir));
    const objects = path.join(dir, '.git', 'objects');
    const scope = {
      root: path.resolve(root),
      realRoot: realOrSelf(root),
      repository: dir,
      objects,
      borrowed: alternateChain(objects),
    };
    return await inObjectScope(scope, fn);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
