import type { z } from 'zod';
import type { LoopSpec, Models } from '../common/loop-spec';

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
  plan(input: I, defaults: { models: Models }): LoopPlan;
}
