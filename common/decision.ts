import type { Decision, DecisionInput, DecisionKind } from './decision-schema';
import { canonicalJson } from './sshsig';

// What a decision is: its schema (common/decision-schema.ts, for senders: the client, the CLI)
// and the workflow's own check (common/decision-check.ts, no zod in the workflow bundle). This
// module holds what both sides share, and stays free of zod so that workflows may import it.

/**
 * Control characters, line and paragraph separators, bidi controls and characters that show as
 * nothing (soft hyphen, joiners, fillers, variation selectors): never in a name or an id, so
 * `al\u00adice` cannot pass for `alice` on a screen.
 */
export const UNPRINTABLE =
  /[\u0000-\u001f\u007f-\u00a0\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]/;
/** The most a decision (as JSON) may weigh; a larger one is refused before it is recorded. */
export const MAX_DECISION_BYTES = 16_384;
/** The longest note, reason or guidance a decision may carry. */
export const MAX_TEXT = 4000;

export type { Decision, DecisionInput, DecisionKind };

/**
 * What a signature covers: the decision (defaults applied, without its signature), the run's
 * workflow id and, given `run`, which run and which of its waits it decides (`v2`):
 * - `firstRunId`: the Temporal run id of the first execution of the run's chain, which continuing
 *   as new and resets keep, and no other start under the same workflow id has;
 * - `wait`: the wait it decides ({@link decisionWait}), null when the run waits for nothing.
 * So it cannot be replayed on another run, turned into another decision, sent to a later run under
 * the same workflow id (a `--force` event, a client's `reuse`, a raw start once the first has
 * closed), or to a later wait of the same run (one a reset to before the wait opened anew): any
 * client may do those, and read the signed decisions of earlier runs from their history. Runs that
 * pinned their trust with `decisionsForRun` take only `v2`; `v1` is what older runs take.
 */
export function decisionMessage(
  workflowId: string,
  decision: Decision,
  run?: { firstRunId: string; wait: string | null },
): string {
  const { signature: _signature, ...rest } = decision;
  return run === undefined
    ? `loopwright decision v1\n${canonicalJson({ workflowId, decision: rest })}`
    : `loopwright decision v2\n${canonicalJson({ workflowId, firstRunId: run.firstRunId, wait: run.wait, decision: rest })}`;
}

/**
 * The wait a run's record (a loop run's or an improvement's, as its `state` query answers) says
 * the run is in, as a signed decision names it; null when it waits for nothing. A loop run's wait
 * is named by when it began (workflow time: the same when a history is replayed, new when a reset
 * run waits again), an audit by when the run ended, an improvement's review by its candidate.
 */
export function decisionWait(record: unknown): string | null {
  if (!record || typeof record !== 'object') return null;
  const r = record as {
    state?: unknown;
    escalation?: { since?: unknown } | null;
    audit?: { needed?: unknown; reviewedBy?: unknown } | null;
    endedAt?: unknown;
    candidate?: unknown;
  };
  if (r.state === 'awaiting_human' && typeof r.escalation?.since === 'string') return `human ${r.escalation.since}`;
  if (r.state === 'awaiting_review') return `review ${canonicalJson(r.candidate ?? null)}`;
  if (r.audit?.needed === true && r.audit.reviewedBy === undefined && typeof r.endedAt === 'string')
    return `audit ${r.endedAt}`;
  return null;
}

/**
 * A decision the run applied. `verified`: true when it was signed by a key the worker's allowed
 * signers list for `by` (the verified principal; `fingerprint` is the key's), false when it was
 * not signed (`by` is only what the sender claimed: shown as unverified). Absent in runs from
 * before signed decisions.
 */
export type AppliedDecision = Decision & { status: 'applied'; at: string; verified?: boolean; fingerprint?: string };

/**
 * A decision the run refused, as a bounded summary (nothing of it is kept whole, so no decision
 * can make a run's record too large): what it claimed to be, why it was refused and its size.
 */
export interface RefusedDecision {
  kind: string;
  id: string;
  by: string;
  status: 'refused';
  reason: string;
  at: string;
  /** The size of the decision as sent (JSON bytes). */
  bytes?: number;
  fingerprint?: string;
}

/** A decision as the run recorded it: applied, or refused with the reason. */
export type DecisionRecord = AppliedDecision | RefusedDecision;

/**
 * How a decision's `by` was established, for people reading a record: ` (verified, key SHA256:…)`
 * for a signed, verified one, ` (unverified)` otherwise (unsigned, or from before signatures).
 */
export function byline(d: { verified?: boolean | null; fingerprint?: string | null }): string {
  return d.verified ? ` (verified, key ${d.fingerprint})` : d.verified === null ? '' : ' (unverified)';
}
