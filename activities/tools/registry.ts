import { z } from 'zod';
import { ConfigError } from '../../common/errors';
import { zodIssues } from '../../common/format';
import type { ObjectSchema, ToolDefinition } from '../../common/model-messages';
import { BUILT_IN_TOOLS } from './built-in';
import { ToolError, type Tool, type ToolClass, type ToolContext, type ToolOutcome } from './types';

/** The tools one loop can use, by name. */
export interface ToolRegistry {
  get(name: string): Tool | undefined;
  /** Every registered name, built-ins first, in registration order. */
  names(): string[];
  /** The definitions to send to the model for `names`, in that order (Loopwright's shape; the model's adapter maps it); unknown names throw ConfigError. */
  definitions(names: string[]): ToolDefinition[];
  classOf(name: string): ToolClass | undefined;
}

function inputSchemaOf(tool: Tool): ObjectSchema {
  const schema = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  if (schema.type !== 'object') {
    throw new ConfigError(
      `tool ${tool.name} must take an object as input (its schema has type ${String(schema.type)})`,
    );
  }
  return schema as ObjectSchema;
}

/**
 * The built-in tools plus a loop's own (`extra`). Throws ConfigError on a duplicate name or
 * on an input schema that is not a JSON object schema, so a bad loop fails when it starts.
 */
export function createToolRegistry(extra: Tool[] = []): ToolRegistry {
  const tools = new Map<string, Tool>();
  const schemas = new Map<string, ObjectSchema>();
  for (const tool of [...BUILT_IN_TOOLS, ...extra]) {
    if (tools.has(tool.name)) throw new ConfigError(`duplicate tool name ${tool.name}: every tool needs its own name`);
    tools.set(tool.name, tool);
    schemas.set(tool.name, inputSchemaOf(tool));
  }
  return {
    get: (name) => tools.get(name),
    names: () => [...tools.keys()],
    classOf: (name) => tools.get(name)?.class,
    definitions(names) {
      return names.map((name) => {
        const tool = tools.get(name);
        if (!tool) throw new ConfigError(`unknown tool ${name}: available: ${[...tools.keys()].join(', ')}`);
        return { name, description: tool.description, inputSchema: structuredClone(schemas.get(name)!) };
      });
    },
  };
}

function messageOf(err: unknown): string {
  if (err instanceof ToolError) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0] ?? '';
  return String(err).split('\n')[0] ?? '';
}

/** Deadline of one tool call when `ctx.deadlineMs` is not set (ms). */
export const DEFAULT_TOOL_DEADLINE_MS = 60_000;
/** How much longer than its own command timeout a command tool may take: kill, grace, output (ms). */
export const COMMAND_DEADLINE_MARGIN_MS = 10_000;
/** How often executeTool heartbeats while a tool runs (ms). */
export const TOOL_HEARTBEAT_MS = 1000;
// Built-in tools that run a process with `ctx.commandTimeoutMs` of their own.
const COMMAND_TOOLS = new Set(['run_command', 'git_diff', 'git_status']);

/**
 * The deadline of one call to `name` (ms): `ctx.deadlineMs`, else {@link DEFAULT_TOOL_DEADLINE_MS};
 * for run_command, git_diff and git_status never less than `ctx.commandTimeoutMs` plus
 * {@link COMMAND_DEADLINE_MARGIN_MS}, so the command's own timeout (which kills its process
 * group and returns its output) fires first and the deadline is only the backstop.
 */
export function toolDeadlineMs(name: string, ctx: ToolContext): number {
  const deadline = ctx.deadlineMs ?? DEFAULT_TOOL_DEADLINE_MS;
  return COMMAND_TOOLS.has(name) ? Math.max(deadline, ctx.commandTimeoutMs + COMMAND_DEADLINE_MARGIN_MS) : deadline;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

type Settled =
  { kind: 'done'; content: string } | { kind: 'failed'; err: unknown } | { kind: 'deadline' } | { kind: 'cancelled' };

/**
 * Runs `tool` against its deadline, from outside the tool's own code: a timer here (not the
 * tool) decides, aborts the signal the tool was given, and stops waiting. Heartbeats on the
 * tool's behalf meanwhile, so a slow async tool is not mistaken for a lost worker.
 *
 * What this can stop: anything that waits asynchronously (I/O, timers, a child process, a
 * tool that never resolves) and any tool that checks its signal; it also gives the activity
 * back on cancellation without waiting for the tool. What it cannot stop: a synchronous
 * hang. JavaScript cannot interrupt the thread it runs on, so a custom, operator-written tool
 * that loops or blocks synchronously freezes the whole worker (every run, every query)
 * before this timer can fire. The built-in tools therefore never block synchronously: async
 * fs only, FIFOs opened without waiting, long loops cut into short slices, linear-time (RE2)
 * matching in a worker thread that the aborted signal terminates, bounded work (text-files.ts,
 * search.ts). A timed-out call may leave work half done (a write tool checks its signal
 * before writing, but one already writing finishes).
 */
async function runWithDeadline(tool: Tool, input: unknown, ctx: ToolContext): Promise<Settled> {
  const deadline = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, deadline.signal]) : deadline.signal;
  let timer: NodeJS.Timeout | undefined;
  let onCancel: (() => void) | undefined;
  const beat = ctx.heartbeat ? setInterval(ctx.heartbeat, TOOL_HEARTBEAT_MS) : undefined;
  const limitMs = toolDeadlineMs(tool.name, ctx);
  try {
    // Called inside an async function, so a tool that throws synchronously is a failed call too.
    const running = (async () => tool.run(input, { ...ctx, signal }))();
    return await Promise.race<Settled>([
      running.then(
        (content) => ({ kind: 'done', content }),
        (err: unknown) => ({ kind: 'failed', err }),
      ),
      new Promise<Settled>((resolve) => {
        timer = setTimeout(() => {
          deadline.abort(new ToolError(`${tool.name} timed out after ${seconds(limitMs)}`));
          resolve({ kind: 'deadline' });
        }, limitMs);
      }),
      new Promise<Settled>((resolve) => {
        if (!ctx.signal) return;
        onCancel = () => resolve({ kind: 'cancelled' });
        ctx.signal.addEventListener('abort', onCancel, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    clearInterval(beat);
    if (onCancel) ctx.signal?.removeEventListener('abort', onCancel);
  }
}

/**
 * Runs one tool call from the model and returns what goes back as its tool_result. Never
 * throws for the model's mistakes or the tool's failures: an unknown tool, input that fails
 * the schema (one `path: message` line per problem), a ToolError or any other error all come
 * back as `isError` outcomes with a message and no stack. A call still running at its
 * deadline ({@link toolDeadlineMs}) is abandoned with its signal aborted and comes back as
 * `<tool> timed out after Ns: ...` (see runWithDeadline for what that can and cannot stop).
 * It throws only when `ctx.signal` has aborted (the activity was cancelled): then the abort
 * reason is rethrown, without waiting for the tool to notice.
 */
export async function executeTool(
  registry: ToolRegistry,
  name: string,
  rawInput: unknown,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  ctx.signal?.throwIfAborted();
  const tool = registry.get(name);
  if (!tool) return { content: `unknown tool ${name}: available: ${registry.names().join(', ')}`, isError: true };
  const parsed = tool.input.safeParse(rawInput);
  if (!parsed.success) {
    return { content: `invalid input for ${name}:\n${zodIssues(parsed.error).join('\n')}`, isError: true };
  }
  const settled = await runWithDeadline(tool, parsed.data, ctx);
  ctx.signal?.throwIfAborted();
  switch (settled.kind) {
    case 'done':
      return { content: settled.content, isError: false };
    case 'deadline':
      return {
        content: `${name} timed out after ${seconds(toolDeadlineMs(name, ctx))}: the call was stopped; ask for less at once (a narrower path, a smaller file, a simpler pattern)`,
        isError: true,
      };
    case 'cancelled':
      throw ctx.signal?.reason ?? new Error(`tool ${name} was cancelled`);
    case 'failed': {
      const prefix = settled.err instanceof ToolError ? '' : `${name} failed: `;
      return { content: `${prefix}${messageOf(settled.err)}`, isError: true };
    }
  }
}
