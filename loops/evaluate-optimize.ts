import { z } from 'zod';
import { DurationSchema, LoopSpecSchema } from '../common/loop-spec';
import type { LoopDefinition } from './loop-definition';

/** Input of `evaluate-optimize`: any task, judged against a rubric the caller supplies. */
export const EvaluateOptimizeInputSchema = z
  .object({
    task: z.string().trim().min(1, { message: 'say what the agent should do' }),
    rubric: z.array(z.string().trim().min(1)).min(1, { message: 'give at least one rubric item' }),
    maxAttempts: z.number().int().min(1).max(20).optional(),
    escalationTimeout: DurationSchema.optional(),
  })
  .strict();
export type EvaluateOptimizeInput = z.infer<typeof EvaluateOptimizeInputSchema>;

const SYSTEM_PROMPT = [
  'You are a careful worker. Produce the output the task asks for, and nothing else.',
  'When earlier attempts were reviewed, their failures and required corrections follow the task: fix every one.',
].join('\n');

/**
 * The generic verified loop: the worker model answers the task, an independent judge checks
 * the answer against the rubric, failures feed the next attempt (3 by default), and a human
 * decides when the attempts run out (waiting 24 h by default).
 */
export const evaluateOptimize: LoopDefinition<EvaluateOptimizeInput> = {
  name: 'evaluate-optimize',
  description: 'Any task, answered by the worker model and judged against your rubric.',
  example: { task: 'Write a haiku about durable execution.', rubric: ['has three lines', 'mentions a crash'], maxAttempts: 3 },
  inputSchema: EvaluateOptimizeInputSchema,
  plan(input, defaults) {
    const spec = LoopSpecSchema.parse({
      name: 'evaluate-optimize',
      version: '1',
      description: this.description,
      agent: { systemPrompt: SYSTEM_PROMPT, maxTokens: 4096 },
      models: defaults.models,
      checks: [{ kind: 'judge', name: 'judge', rubric: input.rubric }],
      budget: { maxAttempts: input.maxAttempts ?? 3 },
      escalation: { timeout: input.escalationTimeout ?? '24h' },
      autonomy: 'L1',
    });
    return { task: input.task, spec };
  },
};
