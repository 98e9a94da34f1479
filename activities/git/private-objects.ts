import { lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { privateFolder, workerTmpDir } from '../../server/private-folder';
import { realOrSelf } from '../sandbox/real-path';
import { initBorrowingRepository } from './borrowing-repository';
import { inObjectScope, objectScopeAt } from './object-scope';
import { alternateChain } from './read-only-stores';
import { repositoryDirs } from './worker-git';

/**
 * A private store whose owner cannot be told (made before stores named theirs, or by a worker in
 * another pid namespace sharing this folder) older than this is a crashed worker's: removed by the next check.
 */
const STALE_MS = 24 * 60 * 60 * 1000;

/** The file in each private store's git folder that names the process it belongs to. */
const OWNER_FILE = path.join('.git', 'loopwright-owner');

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
  sweepStale(parent);
  const dir = await mkdtemp(path.join(parent, 'store-'));
  try {
    await initBorrowingRepository(root, dir);
    writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify(thisProcess()));
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

/** A process as its store names it: pid, start time and pid namespace, on this boot (so a reused pid is not it). */
interface ProcessId {
  boot: string;
  pidNamespace: string;
  pid: number;
  start: string;
}

const readOr = (read: () => string, fallback = ''): string => {
  try {
    return read();
  } catch {
    return fallback;
  }
};

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot ('' when it is gone). */
function startTime(pid: number): string {
  const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

function thisProcess(): ProcessId {
  return {
    boot: readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pidNamespace: readOr(() => readlinkSync('/proc/self/ns/pid')),
    pid: process.pid,
    start: startTime(process.pid),
  };
}

/**
 * Whether the store at `at` was left: its owner is gone (another boot, or no process of that pid
 * and start time in this pid namespace), or it names no owner this process can judge and is
 * older than {@link STALE_MS}. A live owner's store stays however long its check runs.
 */
function isLeft(at: string): boolean {
  let owner: Partial<ProcessId> | undefined;
  try {
    owner = JSON.parse(readFileSync(path.join(at, OWNER_FILE), 'utf8')) as Partial<ProcessId>;
  } catch {
    owner = undefined;
  }
  const me = thisProcess();
  if (owner && me.boot !== '' && owner.boot !== undefined && owner.boot !== me.boot) return true;
  if (owner && owner.pidNamespace === me.pidNamespace && me.pidNamespace !== '' && typeof owner.pid === 'number')
    return startTime(owner.pid) !== owner.start || owner.start === '';
  // No owner yet (it is being made) or none we can judge: by age.
  const mtime = lstatSync(at, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
  return mtime < Date.now() - STALE_MS;
}

/** Removes private stores that crashed or killed workers left (their owner is gone); a live owner's store stays. */
function sweepStale(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith('store-'))) {
    const at = path.join(parent, name);
    if (isLeft(at)) void rm(at, { recursive: true, force: true }).catch(() => undefined);
  }
}
