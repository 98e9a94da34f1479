import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited open across exec (above stdio, other than
 * Node's IPC channel): bubblewrap closes none of the descriptors it is started with, so each
 * would reach every sandboxed command (a pipe or file of whatever started the worker: a
 * supervisor's log, a CI runner's job output). Node, libuv and the Temporal core open their own
 * with close-on-exec, so only inherited ones lack it. Linux only (reads /proc/self/fdinfo);
 * returns the descriptors closed.
 */
export function closeInheritedFds(env: Record<string, string | undefined> = process.env): number[] {
  if (process.platform !== 'linux') return [];
  const keep = new Set([0, 1, 2, Number(env.NODE_CHANNEL_FD ?? -1)]);
  const closed: number[] = [];
  let fds: number[];
  try {
    fds = readdirSync('/proc/self/fd').map(Number);
  } catch {
    return [];
  }
  for (const fd of fds) {
    if (!Number.isInteger(fd) || keep.has(fd)) continue;
    let flags: number;
    try {
      flags = parseInt(/^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1] ?? '', 8);
    } catch {
      continue; // the descriptor readdir itself used, closed by now
    }
    if (Number.isNaN(flags) || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // gone already
    }
  }
  return closed;
}
