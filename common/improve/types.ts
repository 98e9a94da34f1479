import { z } from 'zod';

/**
 * The improvable surface of a loop (its harness): what the improvement loop may change, and
 * nothing else. The rubric, the checks, the budgets, the autonomy level, the tools a loop may
 * use (permissions) and the improvement loop itself are not part of it.
 */
export const HarnessSchema = z.strictObject({
  /** The worker's system prompt. */
  systemPrompt: z.string().min(1),
  /** Knowledge or skill documents, by name; appended to the system prompt under their names. */
  knowledge: z.record(z.string().min(1), z.string()).default({}),
  /** Descriptions of the loop's tools, by tool name, replacing the built-in ones. */
  toolDescriptions: z.record(z.string().min(1), z.string().min(1)).default({}),
});
export type Harness = z.infer<typeof HarnessSchema>;

/** One stored version of a loop's harness. */
export interface HarnessVersion {
  /** 1, 2, 3, ... */
  version: number;
  harness: Harness;
  createdAt: string;
  /** Who made it: `built-in` for v1, else the person who approved it (or rolled back to it). */
  by: string;
  reason: string;
  /** The improvement run that proposed it, when one did. */
  proposedBy?: string;
}

/** A task of a loop's regression set: an input of the loop and what its run should do. */
export interface RegressionTask {
  /** `t1`, `t2`, ... in the order added. */
  id: string;
  /** The loop's input (what `loopwright run <loop> --input` takes). */
  input: unknown;
  /** `pass`: the run should end completed; `fail`: it should not (a bad task must stay refused). */
  expect: 'pass' | 'fail';
  /** The run it came from. */
  fromRun?: string;
  addedAt: string;
  by: string;
  /**
   * Since signed store requests: true when a key the worker's allowed signers list for `by`
   * signed the request (`fingerprint` is the key's), false when the worker had none.
   */
  verified?: boolean;
  fingerprint?: string;
}

/** One change of a proposal: a path into the harness and its new value. */
export const ProposedChangeSchema = z.strictObject({
  /**
   * `systemPrompt`, `knowledge.<name>` or `toolDescriptions.<tool>`. Anything else (for example
   * `rubric`, `checks`, `budget.maxAttempts`, `autonomy`, `agent.tools`) is outside the surface.
   */
  path: z.string().min(1),
  /** The new text (the whole value, not a patch); `null` removes a knowledge document. */
  value: z.string().nullable(),
});
export type ProposedChange = z.infer<typeof ProposedChangeSchema>;

/** The proposer's answer (its `submit_proposal` tool input): the changes and their contract. */
export const ProposalSchema = z.strictObject({
  changes: z.array(ProposedChangeSchema).min(1),
  contract: z.strictObject({
    /** The failing runs the change answers, and how often the failure occurred. */
    failingRuns: z.array(z.string()),
    occurrences: z.number().int().nonnegative(),
    rootCause: z.string().min(1),
    expectedImprovement: z.string().min(1),
    rollback: z.string().min(1),
  }),
});
export type Proposal = z.infer<typeof ProposalSchema>;

/** A group of similar failures across runs (see mining.ts). */
export interface FailureGroup {
  /** `<check>|<rubric item or ->|<normalized reason>`. */
  key: string;
  check: string;
  /** The failed rubric item, when the check named one. */
  item: string | null;
  /** The reason with numbers, paths and quoted text normalized. */
  reason: string;
  /** Distinct runs in which it occurred, oldest first. */
  runs: string[];
  /** Failing verdicts in all (a run may fail the same way in several attempts). */
  occurrences: number;
  /** Up to 3 original reasons, for the proposer. */
  examples: string[];
}

/** One child run of an evaluation. */
export interface EvalRun {
  task: string;
  /** Which harness ran it. */
  arm: 'current' | 'candidate';
  /** 0-based repeat index. */
  repeat: number;
  /** The run did what its task expects (completed for `pass`, anything else for `fail`). */
  success: boolean;
  costUsd: number;
  /** The child's workflow id. */
  workflowId: string;
}

/** A loop's current harness version. */
export interface CurrentHarness {
  version: number;
  harness: Harness;
}
