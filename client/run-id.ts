import { randomBytes } from 'node:crypto';
import { checkId, MAX_LOOKUP_ID_LENGTH } from './ids';

/** A fresh workflow id for a manual run: `<loop>/<yyyymmdd-hhmmss>-<4 hex>`, sortable and unique enough. */
export function newRunId(loop: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${loop}/${stamp}-${randomBytes(2).toString('hex')}`;
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
