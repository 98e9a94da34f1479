import type { z } from 'zod';
import type { ToolClass } from '../../common/agent';
import type { Sandbox, SandboxName } from '../sandbox/sandbox';
import type { ToolLedger } from './ledger';

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
  /** Where run_command runs its command (default: the worker's sandbox, from its environment). */
  sandbox?: Sandbox;
  /** Variables the loop declares for its commands (`spec.sandbox.env`); nothing else is inherited. */
  commandEnv?: Record<string, string>;
  /** Told which sandbox ran a command, for the run's record. */
  onCommand?: (ran: { sandbox: SandboxName }) => void;
  /** The activity's cancellation; a running command is killed when it fires. */
  signal?: AbortSignal;
  /** Called while long tools work, so Temporal sees the activity alive. */
  heartbeat?: () => void;
  /**
   * How long one tool call may take (ms) before executeTool stops waiting, aborts `signal`
   * and returns `<tool> timed out after Ns` to the model. Default: 60 s; tools that run
   * processes (run_command, git_diff, git_status) always get at least `commandTimeoutMs` plus
   * a margin, so their own timeout fires first. See `toolDeadlineMs` in registry.ts.
   */
  deadlineMs?: number;
  /**
   * This call's idempotency key (the same on every retry of its activity, after a lost worker)
   * and the worker's ledger, for a tool whose work must not be done twice (edit_file).
   */
  idempotency?: { key: string; ledger: ToolLedger };
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
