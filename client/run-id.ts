import { randomBytes } from 'node:crypto';

/** A fresh workflow id for a manual run: `<loop>/<yyyymmdd-hhmmss>-<4 hex>`, sortable and unique enough. */
export function newRunId(loop: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${loop}/${stamp}-${randomBytes(2).toString('hex')}`;
}
