import { z } from 'zod';
import { ConfigError } from '../../common/errors';
import { zodIssues } from '../../common/format';
import { BUILT_IN_TOOLS } from './built-in';
import { ToolError, type Tool, type ToolClass, type ToolContext, type ToolOutcome } from './types';

/** A tool as the Anthropic Messages API takes it (assignable to the SDK's `Tool`). */
export interface AnthropicToolDef {
  name: string;
  description: string;
  input_schema: { type: 'object'; properties?: unknown; required?: string[]; [key: string]: unknown };
}

/** The tools one loop can use, by name. */
export interface ToolRegistry {
  get(name: string): Tool | undefined;
  /** Every registered name, built-ins first, in registration order. */
  names(): string[];
  /** The definitions to send to the model for `names`, in that order; unknown names throw ConfigError. */
  definitions(names: string[]): AnthropicToolDef[];
  classOf(name: string): ToolClass | undefined;
}

function inputSchemaOf(tool: Tool): AnthropicToolDef['input_schema'] {
  const schema = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  if (schema.type !== 'object') {
    throw new ConfigError(`tool ${tool.name} must take an object as input (its schema has type ${String(schema.type)})`);
  }
  return schema as AnthropicToolDef['input_schema'];
}

/**
 * The built-in tools plus a loop's own (`extra`). Throws ConfigError on a duplicate name or
 * on an input schema that is not a JSON object schema, so a bad loop fails when it starts.
 */
export function createToolRegistry(extra: Tool[] = []): ToolRegistry {
  const tools = new Map<string, Tool>();
  const schemas = new Map<string, AnthropicToolDef['input_schema']>();
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
        return { name, description: tool.description, input_schema: structuredClone(schemas.get(name)!) };
      });
    },
  };
}

function messageOf(err: unknown): string {
  if (err instanceof ToolError) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0];
  return String(err).split('\n')[0];
}

/**
 * Runs one tool call from the model and returns what goes back as its tool_result. Never
 * throws for the model's mistakes or the tool's failures: an unknown tool, input that fails
 * the schema (one `path: message` line per problem), a ToolError or any other error all come
 * back as `isError` outcomes with a message and no stack. It throws only when `ctx.signal`
 * has aborted (the activity was cancelled): then the abort reason is rethrown.
 */
export async function executeTool(registry: ToolRegistry, name: string, rawInput: unknown, ctx: ToolContext): Promise<ToolOutcome> {
  ctx.signal?.throwIfAborted();
  const tool = registry.get(name);
  if (!tool) return { content: `unknown tool ${name}: available: ${registry.names().join(', ')}`, isError: true };
  const parsed = tool.input.safeParse(rawInput);
  if (!parsed.success) {
    return { content: `invalid input for ${name}:\n${zodIssues(parsed.error).join('\n')}`, isError: true };
  }
  let outcome: ToolOutcome;
  try {
    outcome = { content: await tool.run(parsed.data, ctx), isError: false };
  } catch (err) {
    ctx.signal?.throwIfAborted();
    const prefix = err instanceof ToolError ? '' : `${name} failed: `;
    outcome = { content: `${prefix}${messageOf(err)}`, isError: true };
  }
  ctx.signal?.throwIfAborted();
  return outcome;
}
