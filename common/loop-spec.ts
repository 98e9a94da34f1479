import { z } from 'zod';
import { PromotionRuleSchema } from './promotion';
import type { BudgetSpecName } from './budget';
import { isDuration, parseDuration } from './duration';
import { DEFAULT_MODEL_TIMEOUTS } from './loop-rules';

// The rules workflows read from a spec live in loop-rules.ts, free of zod (see shape-check.ts).
export { DEFAULT_MODEL_TIMEOUTS, modelTimeouts, runsCommands, type ModelTimeouts } from './loop-rules';
import { SECRET_NAME } from './redact';
import { TEST_RUNNERS } from './test-results';

/** A duration string such as `30s`, `5m`, `24h`, `7d`. */
export const DurationSchema = z
  .string()
  .refine(isDuration, { message: 'expected a duration such as 30s, 5m, 24h or 7d' });

/** Autonomy level: L1 reports, L2 prepares changes a human approves, L3 acts and is audited. */
export const AutonomySchema = z.enum(['L1', 'L2', 'L3']);
export type Autonomy = z.infer<typeof AutonomySchema>;

/**
 * How long one model call (one try) may take: `total` for the whole call, from sending the
 * request to the last event (default 10m), and `idle`, the longest wait for the response's
 * headers or its next stream event (default 60s). Either one cut short is a retryable failure
 * that charges the tokens the endpoint reported so far.
 */
export const ModelTimeoutsSchema = z
  .strictObject({ total: DurationSchema.optional(), idle: DurationSchema.optional() })
  .refine((t) => (parseDuration(t.idle ?? DEFAULT_MODEL_TIMEOUTS.idle) ?? 0) >= 1000, {
    message: 'idle must be at least 1s',
    path: ['idle'],
  })
  .refine(
    (t) =>
      (parseDuration(t.total ?? DEFAULT_MODEL_TIMEOUTS.total) ?? 0) >=
      (parseDuration(t.idle ?? DEFAULT_MODEL_TIMEOUTS.idle) ?? 0),
    {
      message: 'total must be at least idle',
      path: ['total'],
    },
  );

/** Model ids per role (the checker may use a different model from the worker), and the limits of each call. */
export const ModelsSchema = z.object({
  worker: z.string().min(1),
  checker: z.string().min(1),
  timeouts: ModelTimeoutsSchema.optional(),
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
  /**
   * What the judge reads: the agent's `output` (default), or, for loops whose agent changes a
   * git workspace, the `change`: the diff against the run's base and the attempt's other
   * verdicts, with the agent's final message only as marked, untrusted context.
   */
  subject: z.enum(['output', 'change']).optional(),
});
export type JudgeCheck = z.infer<typeof JudgeCheckSchema>;

/**
 * A command run in the run's workspace (through `sh -c`); it passes on exit 0 and the tail of
 * its output is the evidence. The candidate is in the file named by LOOPWRIGHT_CANDIDATE_FILE.
 */
export const CommandCheckSchema = z.object({
  kind: z.literal('command'),
  name: z.string().min(1).default('command'),
  command: z.string().min(1),
  timeout: DurationSchema.default('5m'),
});
export type CommandCheck = z.infer<typeof CommandCheckSchema>;

/** The candidate must be JSON that matches a JSON Schema. */
export const SchemaCheckSchema = z.object({
  kind: z.literal('schema'),
  name: z.string().min(1).default('schema'),
  schema: z.record(z.string(), z.unknown()),
});
export type SchemaCheck = z.infer<typeof SchemaCheckSchema>;

/**
 * A person reviews the candidate (after every automated check passed): approve passes it,
 * reject fails it with the reviewer's reason as feedback. Waits up to the escalation timeout.
 */
export const HumanCheckSchema = z.object({
  kind: z.literal('human'),
  name: z.string().min(1).default('review'),
  approvers: z.array(z.string()).default([]),
});
export type HumanCheck = z.infer<typeof HumanCheckSchema>;

/**
 * The standard rubric for code changes, checked on the run's git workspace against the commit
 * it started from: changes stay inside `allowedPaths`, no test is deleted or skipped, and (when
 * required) a regression test is added.
 */
export const DiffPolicyCheckSchema = z.object({
  kind: z.literal('diff'),
  name: z.string().min(1).default('change policy'),
  allowedPaths: z.array(z.string().min(1)).min(1),
  /** Kept so that specs pinned before the `tests` check parse; the regression test is that check's rule now. */
  requireRegressionTest: z.boolean().optional(),
  testPattern: z.string().optional(),
  /**
   * A change to existing test infrastructure: `fail` (default) fails the check; `human` lets the
   * check pass but sends the attempt to a person's review ("test changes") before it can go on.
   */
  testChanges: z.enum(['fail', 'human']).optional(),
});
export type DiffPolicyCheck = z.infer<typeof DiffPolicyCheckSchema>;

/**
 * Evidence discipline for a report: every `path:line` the candidate cites exists in the
 * workspace (the file exists, the line is within it), there is at least one citation, and, when
 * `testCommand` is given, the test `testName` really fails in a fresh run of it.
 */
export const CitationsCheckSchema = z.object({
  kind: z.literal('citations'),
  name: z.string().min(1).default('citations'),
  testName: z.string().min(1),
  testCommand: z.string().min(1).optional(),
  timeout: DurationSchema.default('10m'),
});
export type CitationsCheck = z.infer<typeof CitationsCheckSchema>;

/**
 * The gate of a code change, by test identity (activities/checks/tests.ts): the test command,
 * run with its runner's structured reporter on clean checkouts in the sandbox, must show the
 * named failing test passing as base wrote it (fail-to-pass), every test that passed at base
 * still passing (pass-to-pass), the tests the change adds passing, at least one of them failing
 * on base's code (a real regression test), and the held-out tests passing.
 */
export const TestsCheckSchema = z.object({
  kind: z.literal('tests'),
  name: z.string().min(1).default('tests'),
  command: z.string().min(1),
  /** The test runner; detected from the command (and package.json's script) when absent. */
  runner: z.enum(TEST_RUNNERS).optional(),
  /** For `runner: junit`: the file or folder (relative to the repository) where the runner writes JUnit XML. */
  junitPath: z.string().min(1).optional(),
  /** The test the task is about: a full name, its last part, or `file > name`. */
  failingTest: z.string().min(1).optional(),
  requireRegressionTest: z.boolean().default(true),
  /** RE2 source for test files; default: test folders, `*.test.*`, `*.spec.*`, `*_test.*`, `test_*.py`. */
  testPattern: z.string().optional(),
  /**
   * Tests the agent never sees, run only by the gate: an absolute folder on the worker (outside
   * the repository), copied into the clean checkout at `into`; run by `command` (default: the
   * check's). The way to catch special-casing of the visible tests' inputs.
   */
  heldOut: z
    .object({
      dir: z.string().min(1),
      into: z.string().min(1).default('test/held-out'),
      command: z.string().min(1).optional(),
    })
    .strict()
    .optional(),
  timeout: DurationSchema.default('10m'),
});
export type TestsCheck = z.infer<typeof TestsCheckSchema>;

/** One independent check of a candidate. All of a loop's checks must pass. */
export const CheckSchema = z.discriminatedUnion('kind', [
  JudgeCheckSchema,
  CommandCheckSchema,
  SchemaCheckSchema,
  HumanCheckSchema,
  DiffPolicyCheckSchema,
  CitationsCheckSchema,
  TestsCheckSchema,
]);
export type Check = z.infer<typeof CheckSchema>;
/** The checks that run in an activity (all but the human review). */
export type AutomatedCheck = Exclude<Check, HumanCheck>;

/**
 * Hard limits the workflow enforces in code, before every attempt and every model call.
 * Tokens are input + output. Wall time counts the time the run works, not time it waits for a
 * human. Side effects are counted by effects. One field per row of `BUDGET_DIMENSIONS`
 * (common/budget.ts), which turns them into the limits a run obeys.
 */
export const BudgetSchema = z.object({
  maxAttempts: z.number().int().min(1).max(100),
  maxWallTime: DurationSchema.optional(),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  maxSideEffects: z.number().int().nonnegative().optional(),
} satisfies Record<BudgetSpecName, z.ZodType>);
export type Budget = z.infer<typeof BudgetSchema>;

/**
 * `git_commit`: the run's branch becomes one commit on `targetBranch` (default: the branch
 * checked out in the workspace), carrying a `Loopwright-Effect: <key>` trailer, so it is applied
 * exactly once. Runs at L2 after approval, at L3 at once, never at L1.
 */
export const GitCommitEffectSchema = z.object({
  kind: z.literal('git_commit'),
  name: z.string().min(1).default('commit'),
  targetBranch: z.string().min(1).optional(),
  message: z.string().min(1),
});

/**
 * `report`: the verified candidate becomes `<dir>/<item>.md` (default dir
 * `<workspace>/.loopwright/reports`, an absolute path when given) and `<dir>/index.md` lists every
 * report. Reports are the L1 delivery: they are written at every autonomy level, without approval.
 */
export const ReportEffectSchema = z.object({
  kind: z.literal('report'),
  name: z.string().min(1).default('report'),
  dir: z.string().min(1).optional(),
  /** The report's heading (default: the run's item key). */
  title: z.string().min(1).optional(),
});

/** An effect a verified run has on the world, keyed so it is applied exactly once. */
export const EffectSpecSchema = z.discriminatedUnion('kind', [GitCommitEffectSchema, ReportEffectSchema]);
export type EffectSpec = z.infer<typeof EffectSpecSchema>;

/** Why `name` may not be given to a loop's commands, or null (not HOME or TMPDIR, nothing secret-looking). */
function commandEnvNameProblem(name: string): string | null {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return `${name} is not a variable name: use letters, digits and _`;
  if (name === 'HOME' || name === 'TMPDIR')
    return `${name}: HOME and TMPDIR point at the sandbox's private folders and cannot be set`;
  if (SECRET_NAME.test(name))
    return `${name} looks like a secret, and a loop spec is stored in clear in the run's history: give commands no secrets`;
  return null;
}

/** `commandEnv` of a loop's input and `env` of its spec's sandbox: the variables its commands get. */
export const CommandEnvSchema = z.record(z.string(), z.string()).superRefine((env, ctx) => {
  for (const name of Object.keys(env)) {
    const problem = commandEnvNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
  }
});

/**
 * How the loop's commands run (the agent's `run_command`, command checks, test runs): always
 * in the worker's sandbox (see README "Sandbox"), with an environment built from an allow-list
 * (PATH, LANG, HOME, TMPDIR, CI=true) plus the variables declared here. Nothing is inherited
 * from the worker.
 */
export const SandboxSpecSchema = z.object({
  env: CommandEnvSchema.default({}),
});
export type SandboxSpec = z.infer<typeof SandboxSpecSchema>;

/** Who decides when the loop gives up, and how long the run waits for them. */
export const EscalationPolicySchema = z.object({
  approvers: z.array(z.string()).default([]),
  /** How long a run waits for a human decision; with none by then it ends `budget_exhausted`. */
  timeout: DurationSchema.default('24h'),
});
/** A loop's escalation policy (not a run's escalation: that is `Escalation` in run-record.ts). */
export type EscalationPolicy = z.infer<typeof EscalationPolicySchema>;

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
    /** max_tokens of each model turn. */
    maxTokens: z.number().int().positive().default(4096),
    /**
     * Tools the agent may use (names registered on the worker). None: one model call per
     * attempt. Some: a multi-turn agent session, gated by the autonomy level.
     */
    tools: z.array(z.string().min(1)).default([]),
    /** Model turns per attempt; an attempt that reaches it without a final answer fails. */
    maxTurns: z.number().int().min(1).max(500).default(30),
    /** run_command allow-list: argv prefixes such as "npm test" or "node". Empty refuses every command. */
    commandAllowList: z.array(z.string().min(1)).default([]),
    commandTimeout: DurationSchema.default('2m'),
    /** Tool output longer than this reaches the model as a preview plus a reference. */
    toolOutputCapChars: z.number().int().min(500).default(20_000),
    /** When the conversation grows past this, the oldest tool results are elided. */
    contextBudgetChars: z.number().int().min(10_000).default(400_000),
    /** Descriptions that replace the built-in ones of these tools (part of the improvable harness). */
    toolDescriptions: z.record(z.string().min(1), z.string().min(1)).optional(),
  }),
  models: ModelsSchema,
  checks: z
    .array(CheckSchema)
    .min(1)
    .refine((checks) => new Set(checks.map((c) => c.name)).size === checks.length, {
      message: 'check names must be unique',
    }),
  budget: BudgetSchema,
  escalation: EscalationPolicySchema,
  autonomy: AutonomySchema.default('L1'),
  /**
   * What a verified run does with its result. L1 never applies effects (it reports); L2 waits
   * for a human's approval after verification; L3 applies at once and records an audit entry.
   */
  delivery: z
    .object({
      effects: z.array(EffectSpecSchema).default([]),
      /**
       * Write the run's trace (what `loopwright trace` shows) as Markdown when the run ends, in
       * any state: `<dir>/<workflow id slug>.md`. Default dir: `<workspace>/.loopwright/traces`
       * for runs with a workspace, else `<LOOPWRIGHT_HOME>/traces` on the worker.
       */
      trace: z.object({ dir: z.string().min(1).optional() }).optional(),
    })
    .default({ effects: [] }),
  /** The environment of the loop's commands, on top of the sandbox's allow-list (absent: none). */
  sandbox: SandboxSpecSchema.optional(),
  /** Share of passed runs (0..1) routed to a person for audit; they show in `list --needs-audit`. */
  auditSample: z.number().min(0).max(1).default(0),
  /**
   * Verification debt: how many of this loop's runs may wait for a human at once. While that
   * many wait, runs started by a schedule, an event or discovery stop at once (blocked, with
   * stopReason `verification_debt`) instead of adding to the pile. Runs started by hand are not held back.
   */
  maxPendingReviews: z.number().int().positive().optional(),
  /**
   * When the loop has earned more autonomy (`loopwright autonomy <loop>` shows the evidence).
   * Never applied by Loopwright: a person raises `autonomy` in the spec.
   */
  promotion: PromotionRuleSchema.optional(),
});
export type LoopSpec = z.infer<typeof LoopSpecSchema>;
