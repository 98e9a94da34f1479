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
 * workflow id and, given `firstRunId`, the run it is for (`v2`): the Temporal run id of the first
 * execution of its chain, which continuing as new and resets keep, and no other start under the
 * same workflow id has. So it cannot be replayed on another run, turned into another decision, or
 * sent to a later run under the same workflow id (a `--force` event, a client's `reuse`, a raw
 * start once the first has closed: any client may make one, and read the signed decisions of the
 * runs before it from their history). Runs that pinned their trust with `decisionsForRun` take
 * only `v2`; `v1` (no run) is what older runs take.
 */
export function decisionMessage(workflowId: string, decision: Decision, firstRunId?: string): string {
  const { signature: _signature, ...rest } = decision;
  return firstRunId === undefined
    ? `loopwright decision v1\n${canonicalJson({ workflowId, decision: rest })}`
    : `loopwright decision v2\n${canonicalJson({ workflowId, firstRunId, decision: rest })}`;
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
