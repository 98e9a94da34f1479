import { constants, existsSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * Opening a checked path without following any symlink on the way. confine.ts checks a path and
 * returns its real path (no symlink in it at that moment), but whatever else writes the
 * workspace (a command of another run working in the same folder, or anything else running
 * there) can swap a folder on that path for a symlink between the check and the open: opened by
 * name, the file tools would then read, create or truncate a file outside the workspace
 * (O_NOFOLLOW alone guards only the last component). So the real path is opened one component
 * at a time from `/`, each folder with O_NOFOLLOW and relative to the descriptor of the one
 * before (through `/proc/self/fd/<n>/<name>`, openat without openat): a component that is a
 * symlink now fails (ELOOP), one that is no folder fails (ENOTDIR), and the file opened is the
 * one at the checked path. Linux only; elsewhere the path is opened by name as before.
 */

/** The prefix of a path relative to an open folder's descriptor. */
export const FD_PATH = '/proc/self/fd/';
const ON_LINUX = process.platform === 'linux' && existsSync(FD_PATH);
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | NOFOLLOW;

/** `name` in the folder open as `dir`. */
export function underFd(dir: FileHandle, name: string): string {
  return `${FD_PATH}${dir.fd}/${name}`;
}

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Opens the folder `dir` (absolute, real) without following a symlink anywhere on its path;
 * with `create`, missing folders are made on the way (as `mkdir -p`, never through a symlink).
 */
export async function openFolderNoFollow(dir: string, create = false): Promise<FileHandle> {
  if (!ON_LINUX) {
    if (create) await mkdir(dir, { recursive: true });
    return open(dir, DIR_FLAGS);
  }
  let at = await open('/', DIR_FLAGS);
  try {
    for (const part of path.resolve(dir).split(path.sep).filter(Boolean)) {
      let next: FileHandle;
      try {
        next = await open(underFd(at, part), DIR_FLAGS);
      } catch (err) {
        if (!create || code(err) !== 'ENOENT') throw err;
        await mkdir(underFd(at, part)).catch((e: unknown) => {
          if (code(e) !== 'EEXIST') throw e;
        });
        next = await open(underFd(at, part), DIR_FLAGS);
      }
      await at.close();
      at = next;
    }
    return at;
  } catch (err) {
    await at.close();
    throw err;
  }
}

/**
 * Opens `file` (absolute, real) with `flags` (O_NOFOLLOW added) without following a symlink
 * anywhere on its path; `create` makes missing folders on the way. A path already relative to an
 * open folder (`/proc/self/fd/<n>/<name>`, see {@link underFd}) is opened as it is.
 */
export async function openNoFollow(file: string, flags: number, mode = 0o666, create = false): Promise<FileHandle> {
  if (!ON_LINUX || file.startsWith(FD_PATH)) return open(file, flags | NOFOLLOW, mode);
  const dir = await openFolderNoFollow(path.dirname(file), create);
  try {
    return await open(underFd(dir, path.basename(file)), flags | NOFOLLOW, mode);
  } finally {
    await dir.close();
  }
}
