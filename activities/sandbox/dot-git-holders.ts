import { createHash } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isPidAlive } from '../../server/dev-server-lock';
import { tryPidLock } from '../../server/pid-lock';
import { privateFolder } from '../../server/private-folder';

/**
 * The empty read-only `.git` a workspace without one gets for each command (profile.ts): bubblewrap
 * leaves its mount point on the host, and the last command to end there removes it, so the
 * workspace is as it was. "Last" counts every process on the machine, not just this one: two
 * workers (or a worker and a test run) can sandbox commands in the same folder at once, and
 * removing the folder while another sandbox has it mounted takes the mask away from that
 * sandbox (the kernel detaches a mount whose mount point is removed in another namespace), so
 * code there could make a `.git` whose config the worker's git would then follow.
 *
 * So each command that uses the stand-in registers a file `<pid>-<n>` in a folder of its own
 * for the workspace (under the system's temporary folder, mode 0700), and the decisions (is
 * this `.git` a stand-in? may it go?) are taken under a lock file there. Registrations of
 * processes that no longer run are ignored and cleared.
 */
const ROOT = path.join(tmpdir(), `loopwright-dotgit-${process.getuid?.() ?? 'user'}`);
let sequence = 0;

/** The registry's folder, private to this user: whoever could write there could clear a live registration and take the mask away. */
export function dotGitRoot(): string {
  return privateFolder(ROOT);
}

function folderOf(workspace: string): string {
  return path.join(dotGitRoot(), createHash('sha256').update(workspace).digest('hex').slice(0, 32));
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Runs `fn` holding the workspace's lock file (created exclusively; one held by a dead process is broken). */
function locked<T>(folder: string, fn: () => T): T {
  const lock = path.join(folder, 'lock');
  // Held for microseconds at a time: wait for a live holder (a dead one's file is removed by the try).
  for (let tries = 0; !take(folder, lock); tries++) {
    if (tries > 2000) rmSync(lock, { force: true });
    else Atomics.wait(pause, 0, 0, 5);
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
    // A folder with no registration and no lock holds nothing: it goes, so one is not left per
    // workspace ever used. Another process's lock or registration keeps it (ENOTEMPTY).
    try {
      rmdirSync(folder);
    } catch {
      // in use
    }
  }
}

/** One try at the folder's lock; the folder is made again when another process has just removed it. */
function take(folder: string, lock: string): boolean {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  try {
    return tryPidLock(lock, { mode: 0o600, youngMs: 1000 }).taken;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Live registrations in `folder` (other than `except`); dead ones are removed. */
function liveHolders(folder: string, except?: string): string[] {
  return readdirSync(folder).filter((name) => {
    const pid = Number(/^(\d+)-\d+$/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || name === except) return false;
    if (pid === process.pid || isPidAlive(pid)) return true;
    rmSync(path.join(folder, name), { force: true });
    return false;
  });
}

/**
 * Whether `workspace`'s command gets the stand-in `.git`: true when it has no `.git`, or only the
 * empty one a command running now (in any process) got. Then the returned release must be called
 * when the command ends; undefined when the workspace has a `.git` of its own.
 */
export function holdDotGit(workspace: string): (() => void) | undefined {
  const folder = folderOf(workspace);
  const dotGit = path.join(workspace, '.git');
  const name = locked(folder, () => {
    const exists = lstatSync(dotGit, { throwIfNoEntry: false }) !== undefined;
    if (exists && liveHolders(folder).length === 0) return undefined;
    const mine = `${process.pid}-${++sequence}`;
    closeSync(openSync(path.join(folder, mine), 'w', 0o600));
    return mine;
  });
  if (name === undefined) return undefined;
  return () =>
    locked(folder, () => {
      rmSync(path.join(folder, name), { force: true });
      if (liveHolders(folder, name).length > 0) return;
      try {
        rmdirSync(dotGit);
      } catch {
        // not there, or not the empty folder the sandbox left: not ours to remove
      }
    });
}
