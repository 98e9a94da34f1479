import { closeSync, constants, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { KeyRing } from '../crypto/keyring';
import { isSealed, openFile, sealFile } from './sealed-file';

/**
 * Which reports are sealed, and why. A report (a `report` effect, the trace of
 * `delivery.trace`, their `index.md`) is sealed with the operator's key ring (`<name>.enc`, the
 * format of sealed-file.ts, bound to `<name>`) when a ring is configured and its folder lies
 * outside the run's workspace: `<LOOPWRIGHT_HOME>/traces` on the worker, or an absolute `dir`
 * elsewhere. Those folders are the worker's own store, collecting every run's tasks, candidates
 * and tool summaries, like the transcript store, so they get the same protection. Reports inside
 * the workspace (`<workspace>/.loopwright/reports`, `.../traces`) stay plaintext, redacted: they
 * are the L1 deliverable a person reads in the repository (an editor, a pull request), and the
 * workspace already holds in clear the files they talk about, so sealing them would break the
 * delivery without hiding anything. `loopwright report <file>` prints a sealed one.
 */
export function reportRing(keys: KeyRing | undefined, dir: string, workspace: string | undefined): KeyRing | undefined {
  if (!keys) return undefined;
  return workspace !== undefined && isWithin(path.resolve(workspace), path.resolve(dir)) ? undefined : keys;
}

/** Suffix of a sealed report's file. */
export const SEALED_SUFFIX = '.enc';

/** The file the report `<dir>/<name>` is written to: `<name>.enc` when sealed with `ring`. */
export function reportFile(dir: string, name: string, ring: KeyRing | undefined): string {
  return path.join(dir, ring ? name + SEALED_SUFFIX : name);
}

/**
 * Writes the report `<dir>/<name>`, sealed with `ring` when given (see {@link reportRing}), and
 * removes the other form of the same name (a plaintext copy from before the ring, or a sealed
 * one the folder no longer needs), so a folder holds each report once. Returns the file written.
 */
export function writeReportFile(dir: string, name: string, text: string, ring: KeyRing | undefined): string {
  const file = reportFile(dir, name, ring);
  writeAtomic(file, ring ? sealFile(ring, text, name) : text);
  rmSync(path.join(dir, ring ? name : name + SEALED_SUFFIX), { force: true });
  return file;
}

/**
 * The text of a report file, plaintext or sealed (`.enc`, or any file in the sealed format,
 * opened with `keys` and bound to its name without `.enc`). Undefined when the file is not a
 * regular file. A sealed report whose key is missing throws the KeyMissingError naming it.
 */
export function readReportFile(file: string, keys: KeyRing | undefined): string | undefined {
  let bytes: Buffer;
  try {
    if (!lstatSync(file).isFile()) return undefined;
    bytes = readFileSync(file);
  } catch {
    return undefined;
  }
  if (!isSealed(bytes)) return bytes.toString('utf8');
  const base = path.basename(file);
  const name = base.endsWith(SEALED_SUFFIX) ? base.slice(0, -SEALED_SUFFIX.length) : base;
  return openFile(keys, bytes, name, file).toString('utf8');
}

/**
 * The largest report file the worker reads back (to tell a repeated write, for the index). A
 * report is one run's text, far smaller; a report folder inside the workspace is the agent's to
 * write, and a huge file planted there (a sparse one costs no disk) must not be read whole on the
 * worker's thread.
 */
export const MAX_REPORT_BYTES = 4 * 1024 * 1024;

/**
 * {@link readReportFile}, or undefined when the file does not open (altered, its key missing)
 * or is over MAX_REPORT_BYTES.
 */
export function tryReadReportFile(file: string, keys: KeyRing | undefined): string | undefined {
  try {
    if (lstatSync(file).size > MAX_REPORT_BYTES) return undefined;
    return readReportFile(file, keys);
  } catch {
    return undefined;
  }
}

/**
 * Writes a file through a temporary sibling and a rename, so a reader never sees half of it.
 * The sibling is created afresh (O_EXCL|O_NOFOLLOW), so a symlink planted in its place is not
 * followed; the rename replaces a symlink at `file` itself, never its target.
 */
export function writeAtomic(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** The text of `file` when it is a regular file (never a FIFO, a device or a symlink), else undefined. */
export function readRegular(file: string): string | undefined {
  try {
    return lstatSync(file).isFile() ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `inner` is `outer` or lies inside it (both resolved paths). */
export function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
