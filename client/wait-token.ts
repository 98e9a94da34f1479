import { createHash } from 'node:crypto';
import { decisionWait } from '../common/decision';
import { UsageError } from '../common/errors';

/**
 * A short name of what a run waits on (its {@link decisionWait}: the loop wait by when it began,
 * an audit, an improvement's candidate): the first 12 hex of its SHA-256, or null when the run
 * waits on nothing a person decides. `review` prints it, and `approve|reject|... --wait TOKEN`
 * sends the decision only while the run still waits on that: a run reset, replaced or moved on
 * between the review and the decision is not decided unseen (a signature covers the wait the
 * run is in when it is signed; the token ties that to the one the person reviewed).
 */
export function waitToken(record: unknown): string | null {
  const wait = decisionWait(record);
  return wait === null ? null : createHash('sha256').update(wait).digest('hex').slice(0, 12);
}

/** `--wait`'s value, checked: 12 lowercase hex digits, as `review` prints it. */
export function checkWaitToken(value: string): string {
  if (!/^[0-9a-f]{12}$/.test(value))
    throw new UsageError(`--wait must be the 12 hex digits \`loopwright review\` prints, not "${value}"`);
  return value;
}
