import { randomBytes } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { checkId, MAX_LOOKUP_ID_LENGTH } from './ids';

/** A fresh workflow id for a manual run: `<loop>/<yyyymmdd-hhmmss>-<4 hex>`, sortable and unique enough. */
export function newRunId(loop: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${loop}/${stamp}-${randomBytes(2).toString('hex')}`;
}

/** How many generated ids {@link startUnderFreshId} tries before it lets the server's refusal through. */
export const GENERATED_ID_DRAWS = 5;

/**
 * Runs `start` with an id from `makeId`, and with a fresh one when the server says another
 * workflow holds it: a generated id (its second and 16 random bits) can meet another run's, which
 * is not the user's problem. A start the server took is never repeated by this (the SDK's own
 * retries carry one request id, which the server answers with the same run), so
 * WorkflowExecutionAlreadyStartedError always means another run holds the id. After
 * {@link GENERATED_ID_DRAWS} tries the last refusal is thrown.
 */
export async function startUnderFreshId<T>(makeId: () => string, start: (id: string) => Promise<T>): Promise<T> {
  for (let draw = 1; ; draw++) {
    try {
      return await start(makeId());
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError) || draw >= GENERATED_ID_DRAWS) throw err;
    }
  }
}

/**
 * A run id as given to the client (`run --id`, an event's `<loop>/<key>`): refused with a
 * one-line UsageError (exit 2) when it is empty, longer than Temporal's 1000 characters, or holds
 * a control character, a newline, a bidi control or another invisible character (see
 * client/ids.ts), since the id is printed by `list`, `status` and `trace` and kept in the run's
 * history for good. The CLI holds `run --id` to the shorter MAX_ID_LENGTH.
 */
export function checkRunId(id: string): string {
  return checkId('run id', id, MAX_LOOKUP_ID_LENGTH);
}
