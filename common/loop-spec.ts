import { z } from 'zod';
import { isDuration } from './duration';

/** A duration string such as `30s`, `5m`, `24h`, `7d`. */
export const DurationSchema = z.string().refine(isDuration, { message: 'expected a duration such as 30s, 5m, 24h or 7d' });

/** Autonomy level: L1 reports, L2 prepares changes a human approves, L3 acts and is audited. */
export const AutonomySchema = z.enum(['L1', 'L2', 'L3']);
export type Autonomy = z.infer<typeof AutonomySchema>;

/** Model ids per role; the checker may use a different model from the worker. */
export const ModelsSchema = z.object({
  worker: z.string().min(1),
  checker: z.string().min(1),
});
export type Models = z.infer<typeof ModelsSchema>;

/**
 * The LLM judge: a fresh context holding only the rubric, the task and the candidate; it answers
 * by calling the tool `submit_verdict`. Anything it cannot parse counts as a fail.
 */
export const JudgeCheckSchema = z.object({
  kind: z.literal('judge'),
  name: z.string().min(1).default('judge'),
  rubric: z.array(z.string().min(1)).min(1),
});
export type JudgeCheck = z.infer<typeof JudgeCheckSchema>;

/** One independent check of a candidate. All of a loop's checks must pass. */
export const CheckSchema = z.discriminatedUnion('kind', [JudgeCheckSchema]);
export type Check = z.infer<typeof CheckSchema>;

/** Hard limits the workflow enforces in code. */
export const BudgetSchema = z.object({
  maxAttempts: z.number().int().min(1).max(100),
});
export type Budget = z.infer<typeof BudgetSchema>;

/** Who decides when the loop gives up, and how long the run waits for them. */
export const EscalationSchema = z.object({
  approvers: z.array(z.string()).default([]),
  /** How long a run waits for a human decision; with none by then it ends `budget_exhausted`. */
  timeout: DurationSchema.default('24h'),
});
export type Escalation = z.infer<typeof EscalationSchema>;

/**
 * A loop declared as data. A run pins a snapshot of it at start (see `LoopInput`): the budgets,
 * the rubric (and its hash) and the autonomy level in the run's input are what the run obeys.
 */
export const LoopSpecSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, { message: 'use lower-case letters, digits and dashes' }),
  version: z.string().min(1).default('1'),
  description: z.string().default(''),
  agent: z.object({
    systemPrompt: z.string().min(1),
    maxTokens: z.number().int().positive().default(4096),
  }),
  models: ModelsSchema,
  checks: z.array(CheckSchema).min(1),
  budget: BudgetSchema,
  escalation: EscalationSchema,
  autonomy: AutonomySchema.default('L1'),
});
export type LoopSpec = z.infer<typeof LoopSpecSchema>;
