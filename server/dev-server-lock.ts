import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { dirname } from 'path';
import { DevServerRunningError } from './dev-server-errors';

/** What the lock file of a running dev server says. `pid` is the Temporal server's process. */
export interface DevServerLock {
  pid: number;
  address: string;
  uiUrl?: string;
  startedAt: string;
  /** The Loopwright process that started the server. */
  ownerPid?: number;
  /** When `pid` started (its start time since boot, from /proc), so a reused pid is told apart. */
  pidStart?: string;
}

/**
 * When process `pid` started: field 22 of /proc/<pid>/stat (clock ticks since boot); undefined
 * where there is no /proc (macOS) or no such process. With the pid, it names one process for
 * the life of the machine: a pid the kernel gave to another process after a crash has another start.
 */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** True when the process a lock names still runs: its pid is alive and, where the lock recorded it, started when it did. */
export function isHolderAlive(lock: Pick<DevServerLock, 'pid' | 'pidStart'>): boolean {
  if (!isPidAlive(lock.pid)) return false;
  if (lock.pidStart === undefined) return true;
  const now = processStart(lock.pid);
  return now === undefined || now === lock.pidStart;
}

/** True when a process with this pid exists (including one owned by another user). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The lock in `file`, or undefined when there is none or it cannot be read as a lock. */
export function readDevServerLock(file: string): DevServerLock | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevServerLock>;
    return typeof parsed.pid === 'number' && typeof parsed.address === 'string' ? (parsed as DevServerLock) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock: creates `file` with `lock` atomically (write a temp file, hard-link it into
 * place, which fails if the file exists). A lock whose process still runs throws
 * {@link DevServerRunningError}; a stale one (dead pid, a pid reused by another process since a
 * crash, unreadable) is replaced.
 */
export function acquireDevServerLock(file: string, lock: DevServerLock): void {
  mkdirSync(dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify({ ...lock, pidStart: lock.pidStart ?? processStart(lock.pid) }, null, 2));
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(temp, file);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const existing = readDevServerLock(file);
      if (existing && isHolderAlive(existing)) throw new DevServerRunningError(existing);
      rmSync(file, { force: true });
    }
    const holder = readDevServerLock(file);
    if (holder) throw new DevServerRunningError(holder);
    throw new Error(`could not take the lock ${file}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

/** Rewrites a lock this process holds (for example with the server's pid once it is known). */
export function updateDevServerLock(file: string, lock: DevServerLock): void {
  lock = { ...lock, pidStart: processStart(lock.pid) };
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(lock, null, 2));
  renameSync(temp, file);
}

/** Removes the lock if it still names one of `pids` (never another process's lock). */
export function releaseDevServerLock(file: string, pids: readonly number[]): void {
  if (!existsSync(file)) return;
  const lock = readDevServerLock(file);
  if (!lock || pids.includes(lock.pid)) rmSync(file, { force: true });
}
