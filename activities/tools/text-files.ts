import { readFileSync, statSync, type Stats } from 'node:fs';
import { ToolError } from './types';

/** Largest file read_file and edit_file read (bytes). */
export const MAX_READ_BYTES = 2 * 1024 * 1024;
/** How much of a file is looked at to decide whether it is binary. */
export const BINARY_SNIFF_BYTES = 8 * 1024;

/** True when the first 8 KB of `bytes` hold a NUL byte (the same rule git uses). */
export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
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
    case 'EACCES':
    case 'EPERM':
      return new ToolError(`path ${shown} is not readable or writable by the worker (${code})`);
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}

/** `stat` of an absolute path, with errors the model can act on. */
export function statPath(abs: string, shown: string): Stats {
  try {
    return statSync(abs);
  } catch (err) {
    throw fsToolError(err, shown);
  }
}

/**
 * The UTF-8 text of the file at `abs` (shown to the model as `shown`). Refuses directories,
 * files over {@link MAX_READ_BYTES} and binary files with a ToolError that says why.
 */
export function readTextFile(abs: string, shown: string): string {
  const stats = statPath(abs, shown);
  if (stats.isDirectory()) throw new ToolError(`path ${shown} is a directory: use list_files`);
  if (!stats.isFile()) throw new ToolError(`path ${shown} is not a regular file`);
  if (stats.size > MAX_READ_BYTES) {
    const mb = (stats.size / 1024 / 1024).toFixed(1);
    throw new ToolError(`path ${shown} is ${mb} MB, over the 2 MB limit: use search to find the lines you need`);
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(abs);
  } catch (err) {
    throw fsToolError(err, shown);
  }
  if (looksBinary(bytes)) throw new ToolError(`path ${shown} is a binary file: only text files can be read`);
  return bytes.toString('utf8');
}
