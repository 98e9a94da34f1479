import type { z } from 'zod';
import type { ToolClass } from '../../common/agent';

/**
 * What a tool may do: `read` only looks at the workspace, `write` changes it (or runs
 * commands inside it), `external` reaches outside (network, other services). The autonomy
 * gate (common/agent.ts) decides from it which calls a run may make.
 */
export type { ToolClass };

/** What a tool knows about the run that calls it. Built once per activity call. */
export interface ToolContext {
  /** Absolute workspace root; every file tool is confined to it. */
  root: string;
  /**
   * run_command allow-list: each entry is an argv prefix written as words, e.g. `npm test`,
   * `node`, `git log`. An empty list refuses every command.
   */
  allowedCommands: string[];
  /** run_command timeout (ms); the command's whole process group is killed after it. */
  commandTimeoutMs: number;
  /** Most characters of output run_command, search and git_diff return. */
  outputCapChars: number;
  /** The activity's cancellation; a running command is killed when it fires. */
  signal?: AbortSignal;
  /** Called while long tools work, so Temporal sees the activity alive. */
  heartbeat?: () => void;
}

/**
 * A tool the agent can call: its name and description go to the model, `input` validates
 * what the model sends (and becomes the JSON Schema it sees), `run` does the work and returns
 * the text the model reads.
 */
export interface Tool<I = unknown> {
  name: string;
  description: string;
  class: ToolClass;
  input: z.ZodType<I>;
  /** Throws ToolError for anything the model should fix; the message goes back to it. */
  run(input: I, ctx: ToolContext): Promise<string>;
}

/**
 * A failure that is the model's to fix (bad path, text not found, command not allowed).
 * Its message goes back to the model as an `is_error` tool_result, so it says what to do.
 */
export class ToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The result of one tool call as the model sees it: a tool_result's content and is_error. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}
