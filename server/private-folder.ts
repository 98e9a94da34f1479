import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../common/errors';

/** Folders found private in this process: they stay so (in a sticky /tmp only their owner can rename or remove them). */
const known = new Set<string>();

/**
 * `dir`, made if missing, as a folder only this process's user can enter: a real folder (not a
 * symlink), owned by this uid, mode 0700 (a wider mode of our own folder is narrowed). The
 * worker keeps fixed folders under the system's temporary folder (`loopwright/` for scratch
 * files, gate checkouts and default workspaces; `loopwright-dotgit-<uid>/`), which any local
 * user could otherwise make first: to read the candidates and checkouts in them, or swap a
 * folder for a symlink so the worker writes where they choose. Another owner, or a symlink, is a
 * ConfigError that says what to do. Its parents are made as usual.
 */
export function privateFolder(dir: string): string {
  const abs = path.resolve(dir);
  if (known.has(abs)) return abs;
  mkdirSync(path.dirname(abs), { recursive: true });
  try {
    mkdirSync(abs, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = lstatSync(abs);
  const uid = process.getuid?.();
  const fix = `remove it, or give the worker a temporary folder of its own (TMPDIR)`;
  if (!st.isDirectory())
    throw new ConfigError(
      `${abs} is ${st.isSymbolicLink() ? 'a symlink' : 'not a folder'}, not the worker's own folder: ${fix}`,
    );
  if (uid !== undefined && st.uid !== uid)
    throw new ConfigError(`${abs} belongs to uid ${st.uid}, not to this worker's (${uid}): ${fix}`);
  if ((st.mode & 0o077) !== 0) chmodSync(abs, 0o700);
  known.add(abs);
  return abs;
}

/**
 * The worker's folder under the system's temporary folder (`<tmp>/loopwright`), private as
 * {@link privateFolder} makes it; `parts` below it. Default workspaces, scratch files and the
 * gate's checkouts live there.
 */
export function workerTmpDir(...parts: string[]): string {
  return path.join(privateFolder(path.join(tmpdir(), 'loopwright')), ...parts);
}
