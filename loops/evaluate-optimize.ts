import path from 'node:path';
import { z } from 'zod';
import {
  AutonomySchema,
  BudgetSchema,
  CheckSchema,
  CommandEnvSchema,
  DurationSchema,
  LoopSpecSchema,
  ModelTimeoutsSchema,
} from '../common/loop-spec';
import { harnessPrompt } from '../common/improve/proposal';
import { harnessAgent, type LoopDefinition } from './loop-definition';

/**
 * Input of `evaluate-optimize`: any task, checked by a judge on `rubric` and/or the given
 * `checks` (command, schema, judge, human). `maxAttempts` is a shorthand for
 * `budget.maxAttempts`; `workspace` is where command checks run.
 */
export const EvaluateOptimizeInputSchema = z
  .object({
    task: z.string().trim().min(1, { message: 'say what the agent should do' }),
    rubric: z.array(z.string().trim().min(1)).min(1, { message: 'give at least one rubric item' }).optional(),
    checks: z.array(CheckSchema).optional(),
    maxAttempts: z.number().int().min(1).max(20).optional(),
    budget: BudgetSchema.partial().strict().optional(),
    escalationTimeout: DurationSchema.optional(),
    workspace: z.string().min(1).optional(),
    tools: z.array(z.string().min(1)).optional(),
    autonomy: AutonomySchema.optional(),
    allowCommands: z.array(z.string().min(1)).optional(),
    /** Variables the loop's commands (run_command, command checks) get in the sandbox; nothing is inherited from the worker. */
    commandEnv: CommandEnvSchema.optional(),
    maxTurns: z.number().int().min(1).max(200).optional(),
    auditSample: z.number().min(0).max(1).optional(),
    maxPendingReviews: z.number().int().positive().optional(),
    /** Write the run's trace as Markdown into this folder when the run ends (delivery.trace). */
    traceDir: z.string().min(1).optional(),
    /** Limits of each model call: `{ total, idle }` durations (spec `models.timeouts`; default 10m and 60s). */
    modelTimeouts: ModelTimeoutsSchema.optional(),
  })
  .strict()
  .refine((i) => i.rubric !== undefined || (i.checks?.length ?? 0) > 0, {
    message: 'give a rubric or at least one check',
    path: ['rubric'],
  })
  .refine((i) => !i.tools?.length || i.workspace !== undefined, {
    message: 'tools work in a workspace: give "workspace" (a folder; a git repository for L2)',
    path: ['workspace'],
  });
export type EvaluateOptimizeInput = z.infer<typeof EvaluateOptimizeInputSchema>;

const SYSTEM_PROMPT = [
  'You are a careful worker. Produce the output the task asks for, and nothing else.',
  'When earlier attempts were reviewed, their failures and required corrections follow the task: fix every one.',
].join('\n');

const TOOLS_PROMPT = [
  'You have tools that work inside a workspace folder; paths are relative to it.',
  'Use them to look before you change anything. A tool error tells you what went wrong: adapt, do not repeat the same call.',
  'When you are done, answer with your final output as plain text, without calling a tool.',
].join('\n');

/**
 * The generic verified loop: the worker model answers the task, independent checks judge the
 * answer, failures feed the next attempt (3 attempts by default, other budgets unlimited unless
 * given), and a human decides when a budget runs out (waiting 24 h by default).
 */
export const evaluateOptimize: LoopDefinition<EvaluateOptimizeInput> = {
  name: 'evaluate-optimize',
  description: 'Any task, answered by the worker model and judged against your rubric and checks.',
  example: {
    task: 'Write a haiku about durable execution.',
    rubric: ['has three lines', 'mentions a crash'],
    maxAttempts: 3,
  },
  inputSchema: EvaluateOptimizeInputSchema,
  harness: { systemPrompt: SYSTEM_PROMPT, knowledge: {}, toolDescriptions: {} },
  plan(input, defaults) {
    const judge = input.rubric ? [{ kind: 'judge' as const, name: 'judge', rubric: input.rubric }] : [];
    const spec = LoopSpecSchema.parse({
      name: 'evaluate-optimize',
      version: '2',
      description: this.description,
      agent: {
        ...harnessAgent(defaults.harness),
        ...(input.tools?.length ? { systemPrompt: `${harnessPrompt(defaults.harness)}\n${TOOLS_PROMPT}` } : {}),
        maxTokens: 4096,
        tools: input.tools ?? [],
        ...(input.maxTurns ? { maxTurns: input.maxTurns } : {}),
        commandAllowList: input.allowCommands ?? [],
      },
      models: { ...defaults.models, ...(input.modelTimeouts ? { timeouts: input.modelTimeouts } : {}) },
      checks: [...judge, ...(input.checks ?? [])],
      budget: { ...input.budget, maxAttempts: input.maxAttempts ?? input.budget?.maxAttempts ?? 3 },
      escalation: { timeout: input.escalationTimeout ?? '24h' },
      autonomy: input.autonomy ?? 'L1',
      auditSample: input.auditSample ?? 0,
      ...(input.maxPendingReviews ? { maxPendingReviews: input.maxPendingReviews } : {}),
      ...(input.traceDir ? { delivery: { effects: [], trace: { dir: path.resolve(input.traceDir) } } } : {}),
      ...(input.commandEnv ? { sandbox: { env: input.commandEnv } } : {}),
    });
    return { task: input.task, spec, workspace: input.workspace };
  },
};
