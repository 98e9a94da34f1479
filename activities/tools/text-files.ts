import { constants, type Stats } from 'node:fs';
import { lstat, stat, type FileHandle } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { openNoFollow } from './no-follow';
import { ToolError, type ToolContext } from './types';

/** Largest file read_file, edit_file and search read (bytes). */
export const MAX_READ_BYTES = 2 * 1024 * 1024;
/** Largest content write_file writes and largest file edit_file leaves (bytes): the read cap. */
export const MAX_WRITE_BYTES = MAX_READ_BYTES;
/** How much of a file is looked at to decide whether it is binary. */
export const BINARY_SNIFF_BYTES = 8 * 1024;

// O_NONBLOCK: opening a FIFO must not wait for a writer (or a reader), and that open would
// otherwise hold one of libuv's four threadpool threads for good. O_NOFOLLOW: the path was
// resolved and checked by confine.ts; a symlink swapped in since then is refused, not followed,
// on every component of the path (no-follow.ts), not only the last.
const NO_WAIT = (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);
const READ_FLAGS = constants.O_RDONLY | NO_WAIT;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | NO_WAIT;

/** True when the first 8 KB of `bytes` hold a NUL byte (the same rule git uses). */
export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** `bytes` as the model reads a size: `2.0 MB`, `512 KB`, `12 bytes`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** What kind of thing `stats` describes, for messages: `a named pipe (FIFO)`, `a socket`, ... */
export function kindOf(stats: Stats): string {
  if (stats.isFile()) return 'a regular file';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a named pipe (FIFO)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSymbolicLink()) return 'a symlink';
  return 'not a regular file';
}

function notRegular(shown: string, stats: Stats): ToolError {
  if (stats.isDirectory()) return new ToolError(`path ${shown} is a directory: use list_files`);
  return new ToolError(
    `path ${shown} is ${kindOf(stats)}, not a regular file: only regular files can be read or written`,
  );
}

/** A filesystem error as the model should read it, naming the workspace-relative path. */
export function fsToolError(err: unknown, shown: string): Error {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return new ToolError(`path ${shown} does not exist: use list_files to see what does`);
    case 'ENOTDIR':
      return new ToolError(`path ${shown} goes through something that is not a directory`);
    case 'EISDIR':
      return new ToolError(`path ${shown} is a directory`);
    case 'ELOOP':
      return new ToolError(`path ${shown} became a symlink after it was checked: refused`);
    case 'ENXIO':
      return new ToolError(
        `path ${shown} is a named pipe or socket, not a regular file: only regular files can be read or written`,
      );
    case 'EACCES':
    case 'EPERM':
      return new ToolError(`path ${shown} is not readable or writable by the worker (${code})`);
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}

/** `stat` of an absolute path (async: a stat never opens the file), with errors the model can act on. */
export async function statPath(abs: string, shown: string): Promise<Stats> {
  try {
    return await stat(abs);
  } catch (err) {
    throw fsToolError(err, shown);
  }
}

/**
 * Opens `abs` without waiting and without following a last-component symlink, and refuses
 * (ToolError naming the kind) anything that is not a regular file: a FIFO, a socket, a device,
 * a directory. The caller closes the handle.
 */
export async function openRegular(
  abs: string,
  shown: string,
  mode: 'read' | 'write',
): Promise<{ handle: FileHandle; stats: Stats }> {
  let handle: FileHandle;
  try {
    handle = await openNoFollow(abs, mode === 'read' ? READ_FLAGS : WRITE_FLAGS, 0o666);
  } catch (err) {
    // A FIFO without a reader refuses a non-blocking write open (ENXIO): say what it is.
    const stats = await lstat(abs).catch(() => undefined);
    if (stats && !stats.isFile() && !stats.isSymbolicLink()) throw notRegular(shown, stats);
    throw fsToolError(err, shown);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notRegular(shown, stats);
    return { handle, stats };
  } catch (err) {
    await handle.close();
    throw err instanceof ToolError ? err : fsToolError(err, shown);
  }
}

/**
 * The bytes of the regular file at `abs`, or `null` bytes and its size when it is over
 * `limit` (even if it grew after its size was looked at). Refuses non-regular files like
 * {@link openRegular}.
 */
export async function readRegularFile(
  abs: string,
  shown: string,
  limit = MAX_READ_BYTES,
): Promise<{ bytes: Buffer | null; size: number }> {
  const { handle, stats } = await openRegular(abs, shown, 'read');
  try {
    if (stats.size > limit) return { bytes: null, size: stats.size };
    // At most one byte more than it held (and than the limit): a file that grows while it is
    // read is not read without end, and one that grew past the limit is noticed.
    const buffer = Buffer.alloc(Math.min(stats.size, limit) + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > limit) return { bytes: null, size: filled };
    return { bytes: buffer.subarray(0, filled), size: filled };
  } catch (err) {
    throw fsToolError(err, shown);
  } finally {
    await handle.close();
  }
}

/**
 * The UTF-8 text of the file at `abs` (shown to the model as `shown`). Refuses directories,
 * FIFOs, sockets and devices, files over {@link MAX_READ_BYTES} and binary files with a
 * ToolError that says why. Never blocks the worker's thread: every fs call is async and a
 * FIFO is opened without waiting for a writer.
 */
export async function readTextFile(abs: string, shown: string): Promise<string> {
  const { bytes, size } = await readRegularFile(abs, shown);
  if (bytes === null) {
    throw new ToolError(
      `path ${shown} is ${formatBytes(size)}, over the 2 MB limit: use search to find the lines you need`,
    );
  }
  if (looksBinary(bytes)) throw new ToolError(`path ${shown} is a binary file: only text files can be read`);
  return bytes.toString('utf8');
}

/**
 * Throws a ToolError naming the size and the limit when `bytes` (of UTF-8) are over
 * {@link MAX_WRITE_BYTES}; `what` names them (`content for a.txt`).
 */
export function checkWriteSize(bytes: number, what: string): void {
  if (bytes > MAX_WRITE_BYTES) {
    throw new ToolError(
      `${what} would be ${formatBytes(bytes)} (${bytes} bytes), over the 2 MB limit (${MAX_WRITE_BYTES} bytes): write smaller files`,
    );
  }
}

/**
 * Replaces the contents of the regular file at `abs` with `text` (creating it), refusing
 * non-regular files like {@link openRegular}: it is truncated only once it is known to be one.
 */
export async function writeTextFile(abs: string, shown: string, text: string): Promise<void> {
  const { handle } = await openRegular(abs, shown, 'write');
  try {
    await handle.truncate(0);
    await handle.writeFile(text, 'utf8');
  } catch (err) {
    throw fsToolError(err, shown);
  } finally {
    await handle.close();
  }
}

/** How long a tool computes before it lets the event loop run (timers, other runs, queries). */
export const SLICE_MS = 10;

/**
 * Cuts a long computation into slices: `due()` says when a slice has run out; `pause()` then
 * yields to the event loop, heartbeats and throws if the call was aborted (deadline or
 * cancellation). Use it as `if (slicer.due()) await slicer.pause();` inside hot loops.
 */
export class Slicer {
  private started = performance.now();
  constructor(private readonly ctx: Pick<ToolContext, 'signal' | 'heartbeat'>) {}

  /** True once the call was aborted (its deadline passed or the activity was cancelled). */
  get aborted(): boolean {
    return this.ctx.signal?.aborted ?? false;
  }

  due(): boolean {
    return performance.now() - this.started >= SLICE_MS;
  }

  async pause(): Promise<void> {
    await nextTurn();
    this.ctx.signal?.throwIfAborted();
    this.ctx.heartbeat?.();
    this.started = performance.now();
  }
}
