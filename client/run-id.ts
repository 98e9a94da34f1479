import { randomBytes } from 'node:crypto';
import { requireOneLine } from '../common/terminal';

/** A fresh workflow id for a manual run: `<loop>/<yyyymmdd-hhmmss>-<4 hex>`, sortable and unique enough. */
export function newRunId(loop: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${loop}/${stamp}-${randomBytes(2).toString('hex')}`;
}

/**
 * A run id as given (`run --id`, an event's `<loop>/<key>`): refused with a one-line UsageError
 * (exit 2) when it holds a control character, a newline or a bidi control, since the id is
 * printed by `list`, `status` and `trace` and kept in the run's history for good.
 */
export function checkRunId(id: string): string {
  return requireOneLine('run id', id);
}
