import { lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Scratch folders a worker makes for one piece of work (a check's private object store, a gate
 * checkout, a landing's scratch store) and removes when it is done. A worker killed meanwhile
 * (OOM, SIGKILL, a crash) leaves them, some large (a checkout of the whole repository). Each
 * such folder names the process that made it ({@link markOwner}); the next piece of work of that
 * kind on the machine removes those whose process is gone ({@link sweepLeftBehind}), and never
 * one whose process still runs, however long its work takes.
 */

/** A process as a folder names it: boot, pid namespace, pid and start time (so a reused pid is not it). */
interface ProcessId {
  boot: string;
  pidNamespace: string;
  pid: number;
  start: string;
}

/**
 * A folder whose owner cannot be judged (it names none, or a process of another pid namespace
 * that shares the folder) older than this is taken for left behind: no piece of work runs this long.
 */
const UNJUDGED_STALE_MS = 24 * 60 * 60 * 1000;

const readOr = (read: () => string): string => {
  try {
    return read();
  } catch {
    return '';
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

/** Writes `file`, naming this process as the owner of the folder it is in (or describes). */
export function markOwner(file: string): void {
  writeFileSync(file, JSON.stringify(thisProcess()));
}

/**
 * Whether the folder `dir`, whose owner `ownerFile` names, was left behind: its owner is gone
 * (another boot, or no process of that pid and start time in this pid namespace), or it names
 * no owner this process can judge and is older than a day (one being made names none yet).
 */
export function isLeftBehind(dir: string, ownerFile: string): boolean {
  let owner: Partial<ProcessId> | undefined;
  try {
    owner = JSON.parse(readFileSync(ownerFile, 'utf8')) as Partial<ProcessId>;
  } catch {
    owner = undefined;
  }
  const me = thisProcess();
  if (owner && me.boot !== '' && typeof owner.boot === 'string' && owner.boot !== me.boot) return true;
  if (owner && me.pidNamespace !== '' && owner.pidNamespace === me.pidNamespace && typeof owner.pid === 'number')
    return owner.start === '' || startTime(owner.pid) !== owner.start;
  const mtime = lstatSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
  return mtime < Date.now() - UNJUDGED_STALE_MS;
}

/**
 * Removes (in the background) the folders in `parent` whose names start with `prefix` that were
 * left behind ({@link isLeftBehind}); `ownerFile` gives where each names its owner.
 */
export function sweepLeftBehind(parent: string, prefix: string, ownerFile: (dir: string) => string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const at = path.join(parent, name);
    if (lstatSync(at, { throwIfNoEntry: false })?.isDirectory() && isLeftBehind(at, ownerFile(at)))
      void rm(at, { recursive: true, force: true }).catch(() => undefined);
  }
}
