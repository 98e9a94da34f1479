import { activityCancellation } from '../activity-context';
import { diskShortage, sandboxLimitsFromEnv, watchDisk } from '../sandbox/limits';

/**
 * Runs the worker's own git that writes what a run made (the snapshot hashing a working tree
 * into objects, a gate checkout writing a tree out as files) held to the disk reserve commands
 * are held to (LOOPWRIGHT_SANDBOX_DISK_FREE): `run` gets a signal that fires when the disk
 * holding `dir` runs below it (or the activity is cancelled), and a reserve that ran out, while
 * it ran or by the time it ended (git can write a few hundred MiB between two looks), rejects
 * with `failure` and why: the caller removes what was written. Without it, what commands left
 * just above the reserve would be copied into the rest of the disk here.
 */
export async function heldToDiskReserve<T>(
  dir: string,
  failure: string,
  run: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  const keep = sandboxLimitsFromEnv(process.env).diskFreeBytes;
  const disk = watchDisk(dir, keep);
  const cancel = activityCancellation();
  try {
    const done = await run(disk ? (cancel ? AbortSignal.any([disk.signal, cancel]) : disk.signal) : cancel);
    const short = disk ? diskShortage(dir, keep) : undefined;
    if (short) throw new Error(`${failure}: ${short}`);
    return done;
  } catch (err) {
    if (disk?.signal.aborted) throw new Error(`${failure}: ${String(disk.signal.reason)}`);
    throw err;
  } finally {
    disk?.end();
  }
}
