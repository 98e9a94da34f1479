import { z } from 'zod';
import { MAX_TEXT, UNPRINTABLE } from './decision';
import { DurationSchema } from './loop-spec';

const by = z
  .string()
  .trim()
  .min(1, { message: 'say who decides (--by NAME)' })
  .max(100, { message: 'a name is at most 100 characters' })
  .refine((s) => !UNPRINTABLE.test(s), { message: 'a name may not contain control characters or line breaks' });
const id = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,100}$/, { message: 'a decision id is 1 to 100 letters, digits and ._:-' });
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
  z
    .object({
      kind: z.literal('extend'),
      id,
      by,
      attempts: z.number().int().min(1).max(100).optional(),
      tokens: z.number().int().positive().optional(),
      costUsd: z.number().min(0.000001, { message: 'extend the cost by at least $0.000001' }).optional(),
      wallTime: DurationSchema.optional(),
      note: text.optional(),
      signature,
    })
    .refine(
      (d) => d.attempts !== undefined || d.tokens !== undefined || d.costUsd !== undefined || d.wallTime !== undefined,
      {
        message: 'say what to extend: attempts, tokens, costUsd or wallTime',
      },
    ),
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
    guidance: z
      .string()
      .trim()
      .min(1, { message: 'retry needs guidance for the next attempt' })
      .max(MAX_TEXT, { message: `at most ${MAX_TEXT} characters` }),
    attempts: z.number().int().min(1).max(20).default(1),
    signature,
  }),
]);
export type Decision = z.infer<typeof DecisionSchema>;
/** A decision as a sender writes it (defaults not yet applied). */
export type DecisionInput = z.input<typeof DecisionSchema>;
export type DecisionKind = Decision['kind'];
