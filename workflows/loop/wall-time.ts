import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';

/**
 * Runs `fn` for at most `ms` (no limit when undefined). When the time runs out, the scope
 * `fn` runs in is cancelled, which cancels its activities (the model call learns of it with
 * its next heartbeat), and the result is `{ expired: true }`. Cancellation from outside (the
 * run itself is cancelled) is rethrown as usual.
 */
export async function withWallTime<T>(
  ms: number | undefined,
  fn: () => Promise<T>,
): Promise<{ expired: false; value: T } | { expired: true }> {
  if (ms === undefined) return { expired: false, value: await fn() };
  if (ms <= 0) return { expired: true };
  let expired = false;
  const work = new CancellationScope();
  const timer = new CancellationScope();
  const timing = timer
    .run(() => sleep(ms))
    .then(() => {
      expired = true;
      work.cancel();
    })
    .catch(() => undefined);
  try {
    const value = await work.run(fn);
    return { expired: false, value };
  } catch (err) {
    if (expired && isCancellation(err)) return { expired: true };
    throw err;
  } finally {
    timer.cancel();
    await timing;
  }
}
