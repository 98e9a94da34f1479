import type { z } from 'zod';
import type { LoopSpec, Models } from '../common/loop-spec';
import { harnessPrompt } from '../common/improve/proposal';
import type { Harness } from '../common/improve/types';

/** What a loop definition turns a user's input into: the task and the spec the run pins. */
export interface LoopPlan {
  task: string;
  spec: LoopSpec;
  itemKey?: string;
  /** Folder where command checks run. */
  workspace?: string;
}

/**
 * A built-in (or registered) loop: its input schema, and how an input becomes a run.
 * The client validates the input here, so bad input never reaches a workflow.
 */
export interface LoopDefinition<I = unknown> {
  name: string;
  description: string;
  /** Example input, shown by `loopwright loops`. */
  example: I;
  inputSchema: z.ZodType<I>;
  /** The input of this loop's discovery source (`loopwright discover`), when it has one. */
  discoveryInputSchema?: z.ZodType<unknown>;
  /** The loop's built-in harness (v1 of its improvable surface; see `loopwright harness`). */
  harness: Harness;
  /** `defaults.harness` is the loop's current harness version: its prompt and tool descriptions go into `spec.agent`. */
  plan(input: I, defaults: { models: Models; harness: Harness }): LoopPlan;
  /**
   * The highest autonomy a run of this loop may have without an operator's grant (read on the
   * worker; default L2, where every effect waits for a person's approval). L3 always needs a
   * signed grant (`loopwright grant`).
   */
  ungrantedAutonomy?: 'L1' | 'L2';
  /**
   * Which decisions must be signed when the worker has an allowed-signers list: true: all of
   * them; false: none (unsigned ones are recorded as unverified); default: approvals of effects.
   */
  requireSignedDecisions?: boolean;
}

/** The part of `spec.agent` a harness sets: the system prompt (with its knowledge) and the tool descriptions. */
export function harnessAgent(h: Harness): { systemPrompt: string; toolDescriptions?: Record<string, string> } {
  return {
    systemPrompt: harnessPrompt(h),
    ...(Object.keys(h.toolDescriptions).length ? { toolDescriptions: h.toolDescriptions } : {}),
  };
}
