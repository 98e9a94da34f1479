import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { isPidAlive } from './dev-server-lock';

/**
 * One try at a lock file: creates `file` exclusively holding this process's pid. `taken` when it
 * is ours now; otherwise `holder` is the pid in it (undefined when it cannot be read). A file
 * whose holder no longer runs is removed, so the caller's next try can take it, unless it was
 * written in the last `youngMs` (its holder may have created it and not yet written its pid).
 * Whether to wait, fail or try again is the caller's.
 */
export function tryPidLock(
  file: string,
  opts: { mode?: number; youngMs?: number } = {},
): { taken: true } | { taken: false; holder?: number } {
  try {
    const fd = openSync(file, 'wx', opts.mode ?? 0o644);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return { taken: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  let holder: number | undefined;
  try {
    const pid = Number(readFileSync(file, 'utf8'));
    holder = Number.isInteger(pid) && pid > 0 ? pid : undefined;
    const young = opts.youngMs !== undefined && Date.now() - statSync(file).mtimeMs < opts.youngMs;
    if (!(holder !== undefined && isPidAlive(holder)) && !young) rmSync(file, { force: true });
  } catch {
    // released meanwhile
  }
  return { taken: false, holder };
}
