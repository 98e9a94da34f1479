import { z } from 'zod';
import { DurationSchema } from './loop-spec';
import { canonicalJson } from './sshsig';

/** Control characters, line and paragraph separators and bidi controls: never in a name or an id. */
export const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/;
/** The most a decision (as JSON) may weigh; a larger one is refused before it is recorded. */
export const MAX_DECISION_BYTES = 16_384;
const MAX_TEXT = 4000;

const by = z
  .string()
  .trim()
  .min(1, { message: 'say who decides (--by NAME)' })
  .max(100, { message: 'a name is at most 100 characters' })
  .refine((s) => !UNPRINTABLE.test(s), { message: 'a name may not contain control characters or line breaks' });
const id = z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/, { message: 'a decision id is 1 to 100 letters, digits and ._:-' });
const text = z.string().max(MAX_TEXT, { message: `at most ${MAX_TEXT} characters` });
/** An armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`) over {@link decisionMessage}. */
const signature = z.string().max(4096).optional();

/**
 * A human decision, sent to a waiting run as the `decision` signal.
 * - approve: accept the last candidate, recorded as a human override (never as a pass);
 * - reject: end the run `rejected`;
 * - retry: the guidance becomes feedback and `attempts` more attempts are granted;
 * - extend: a budget grows by the given amounts (recorded with who and how much).
 * During a human review (a `human` check), approve passes the candidate and reject fails it
 * with the reason as feedback. After a run that needs an audit completed, `audit` records a
 * person's review of it (ok or bad).
 * `id` lets the sender find its decision in the run's record (applied or refused).
 */
export const DecisionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('approve'), id, by, note: text.optional(), signature }),
  z.object({ kind: z.literal('reject'), id, by, reason: text.optional(), signature }),
  z.object({
    kind: z.literal('extend'),
    id,
    by,
    attempts: z.number().int().min(1).max(100).optional(),
    tokens: z.number().int().positive().optional(),
    costUsd: z.number().min(0.000001, { message: 'extend the cost by at least $0.000001' }).optional(),
    wallTime: DurationSchema.optional(),
    note: text.optional(),
    signature,
  }).refine((d) => d.attempts !== undefined || d.tokens !== undefined || d.costUsd !== undefined || d.wallTime !== undefined, {
    message: 'say what to extend: attempts, tokens, costUsd or wallTime',
  }),
  z.object({
    kind: z.literal('audit'),
    id,
    by,
    verdict: z.enum(['ok', 'bad']),
    note: text.optional(),
    signature,
  }),
  z.object({
    kind: z.literal('retry'),
    id,
    by,
    guidance: z.string().trim().min(1, { message: 'retry needs guidance for the next attempt' }).max(MAX_TEXT, { message: `at most ${MAX_TEXT} characters` }),
    attempts: z.number().int().min(1).max(20).default(1),
    signature,
  }),
]);
export type Decision = z.infer<typeof DecisionSchema>;
/** A decision as a sender writes it (defaults not yet applied). */
export type DecisionInput = z.input<typeof DecisionSchema>;
export type DecisionKind = Decision['kind'];

/**
 * What a signature covers: the decision (defaults applied, without its signature) and the run's
 * workflow id, so it cannot be replayed on another run or turned into another decision.
 */
export function decisionMessage(workflowId: string, decision: Decision): string {
  const { signature: _signature, ...rest } = decision;
  return `loopwright decision v1\n${canonicalJson({ workflowId, decision: rest })}`;
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
