import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { activityCancellation } from './activity-context';

/**
 * A hook for crash tests, inert in production: it does something only when the worker's
 * environment holds `LOOPWRIGHT_TEST_PAUSE_DIR=<folder>` (only the operator sets a worker's
 * environment; nothing a run sends reaches it). Then an effect whose key has an instruction file
 * `<folder>/<id>.at` (see {@link pauseFiles}) holding a step name, on reaching that step, writes
 * `<folder>/<id>.held` and waits until the activity is cancelled or the process is killed, so a
 * test can `kill -9` the worker at exactly that point (test/workflows/loop/effect-steps.test.ts).
 * Without the variable, or without an instruction for the key, it returns at once.
 */
export async function pauseForTest(step: string, key: string): Promise<void> {
  const dir = process.env.LOOPWRIGHT_TEST_PAUSE_DIR;
  if (!dir) return;
  const files = pauseFiles(dir, key);
  if (!existsSync(files.at) || readFileSync(files.at, 'utf8').trim() !== step) return;
  writeFileSync(files.held, `${key}\n${step}\n`);
  const signal = activityCancellation();
  await new Promise<never>((_, reject) =>
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true }),
  );
}

/** The instruction (`at`: the step to hold at) and marker (`held`) files of effect `key` in `dir`. */
export function pauseFiles(dir: string, key: string): { at: string; held: string } {
  const id = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return { at: path.join(dir, `${id}.at`), held: path.join(dir, `${id}.held`) };
}
