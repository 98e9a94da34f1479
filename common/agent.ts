import type { Autonomy } from './loop-spec';
import type { SandboxName } from './run-record';
import type { Usage } from './usage';

/** What a tool may do: read the workspace, write inside it, or act outside it. */
export type ToolClass = 'read' | 'write' | 'external';

/** A tool call the model made, as the workflow sees it: its name and a short summary, not its input. */
export interface ToolCallRef {
  id: string;
  name: string;
  /** The path, pattern or command, cut to 80 characters (for the UI and the trace). */
  summary: string;
}

/** A tool result on its way to the next model turn: a stored text (by reference) or a short text. */
export interface ToolResultRef {
  toolUseId: string;
  isError: boolean;
  /** Blob reference of the text the model will see (already capped). */
  ref?: string;
  /** A short text given inline (a denial). */
  text?: string;
}

/** One model turn of an agent session, as returned to the workflow. */
export interface TurnResult {
  /** The transcript's new head (the assistant message of this turn). */
  head: string;
  toolCalls: ToolCallRef[];
  stopReason: string | null;
  /** The final answer when there are no tool calls; a preview otherwise. */
  text: string;
  /** Characters of the context this turn sent (for the next turn's budget estimate). */
  contextChars: number;
  /** Tool results elided to stay within the context budget. */
  elided: number;
  usage: Usage;
}

/** One tool call in the run's record: allowed or denied (with the reason), and what it gave. */
export interface ToolCallRecord {
  turn: number;
  name: string;
  summary: string;
  allowed: boolean;
  reason?: string;
  isError: boolean;
  preview?: string;
  bytes?: number;
  /** The sandbox that ran the call's command (run_command). */
  sandbox?: SandboxName;
}

/** Where a run's agent works and with which tools, fixed once at the start of the run. */
export interface SessionSetup {
  root: string;
  /** The commit the run's branch started from (L2), for the diff policy. */
  base: string | null;
  /** The run's own branch (L2: a git worktree on a fresh branch), else null. */
  branch: string | null;
  tools: Array<{ name: string; class: ToolClass }>;
  /** The sandbox this worker runs the run's commands in; absent when the loop runs no command. */
  sandbox?: SandboxName;
}

/**
 * The autonomy gate: which tool classes a level allows. L1 reports (read tools only); L2 works
 * in an isolated workspace (read and write, nothing external); L3 may use all the loop's tools.
 * Enforced by the workflow (before a call is scheduled) and again by the worker (before it runs).
 */
export function gateTool(
  autonomy: Autonomy,
  name: string,
  toolClass: ToolClass | undefined,
  available: readonly string[],
): string | null {
  if (toolClass === undefined)
    return `tool ${name} is not available to this run (its tools: ${available.join(', ') || 'none'})`;
  if (autonomy === 'L1' && toolClass !== 'read')
    return `${name} is a ${toolClass} tool and this run is L1 (report only): only read tools are allowed`;
  if (autonomy === 'L2' && toolClass === 'external')
    return `${name} is an external tool and this run is L2: it may only change its own workspace; effects outside it need a human's approval`;
  return null;
}
