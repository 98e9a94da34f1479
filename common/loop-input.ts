import { z } from 'zod';
import { LoopSpecSchema } from './loop-spec';

/** How a run was started. */
export const TriggerSchema = z.object({
  kind: z.enum(['cli', 'client', 'schedule', 'event', 'discovery']).default('client'),
  by: z.string().optional(),
});
export type Trigger = z.infer<typeof TriggerSchema>;

/**
 * The input of `loopWorkflow`: the task and the pinned snapshot of the loop's spec.
 * Built by the client from a loop definition and the user's input; nothing inside the run
 * can change it.
 */
export const LoopInputSchema = z.object({
  loop: z.string().min(1),
  task: z.string().min(1),
  spec: LoopSpecSchema,
  /** sha256 of the rubric, pinned at start; every judge verdict records the hash it used. */
  rubricHash: z.string().min(1),
  /** The pinned hash of each judge check's rubric, by check name. */
  rubricHashes: z.record(z.string(), z.string()),
  itemKey: z.string().optional(),
  trigger: TriggerSchema.default({ kind: 'client' }),
  /** Prices per million tokens of the models the run uses, pinned at start (LOOPWRIGHT_PRICES). */
  prices: z.record(
    z.string(),
    z.object({ input: z.number(), output: z.number(), cacheRead: z.number(), cacheWrite: z.number() }),
  ),
  /** Folder where command checks run; a fresh folder per run when absent. */
  workspace: z.string().optional(),
  /** Set only by the run itself when it continues as new (see workflows/loop/resume.ts). */
  resume: z.unknown().optional(),
  /**
   * Names whose values are secrets (LOOPWRIGHT_REDACT of the process that started the run):
   * the run redacts what it puts in search attributes and the Web UI, the trace and reports too.
   */
  redact: z.array(z.string()).optional(),
  /** The harness version of the loop the run uses (its prompt and tool descriptions are in `spec.agent`). */
  harness: z.object({ version: z.number().int().positive() }).optional(),
  /**
   * A child run of an improvement's evaluation: it never waits for a person (an escalation ends
   * it at once), applies no effects and writes no reports, and failure mining skips it.
   */
  evaluation: z.boolean().optional(),
  /** The user's input to the loop, kept for the record. */
  input: z.unknown().optional(),
});
export type LoopInput = z.infer<typeof LoopInputSchema>;
