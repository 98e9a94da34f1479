import { z } from 'zod';
import type { ToolDefinition } from '../../../common/model-messages';
import { BUILT_IN_TOOLS, READ_TOOLS, WRITE_TOOLS } from '../../../activities/tools/built-in';
import {
  COMMAND_DEADLINE_MARGIN_MS,
  createToolRegistry,
  DEFAULT_TOOL_DEADLINE_MS,
  executeTool,
  toolDeadlineMs,
} from '../../../activities/tools/registry';
import { ToolError, type Tool } from '../../../activities/tools/types';
import { removeDir, tempDir, toolContext } from './workspace';

let root: string;
beforeEach(() => {
  root = tempDir('registry');
});
afterEach(() => removeDir(root));

const greet: Tool<{ who: string; times: number }> = {
  name: 'greet',
  description: 'Greets someone.',
  class: 'external',
  input: z.object({ who: z.string().min(1), times: z.number().int().default(1) }),
  async run(input) {
    return `hello ${input.who} x${input.times}`;
  },
};

const failing = (name: string, err: unknown): Tool<Record<string, never>> => ({
  name,
  description: 'Always fails.',
  class: 'read',
  input: z.object({}),
  async run() {
    throw err;
  },
});

describe('createToolRegistry', () => {
  test("holds the built-in tools, then the loop's own, with their classes", () => {
    const registry = createToolRegistry([greet]);
    expect(registry.names()).toEqual([
      'read_file',
      'list_files',
      'search',
      'git_diff',
      'git_status',
      'write_file',
      'edit_file',
      'run_command',
      'greet',
    ]);
    expect(registry.classOf('read_file')).toBe('read');
    expect(registry.classOf('run_command')).toBe('write');
    expect(registry.classOf('greet')).toBe('external');
    expect(registry.classOf('nope')).toBeUndefined();
    expect(registry.get('greet')).toBe(greet);
    expect(BUILT_IN_TOOLS).toEqual([...READ_TOOLS, ...WRITE_TOOLS]);
    expect(READ_TOOLS.every((t) => t.class === 'read')).toBe(true);
  });

  test('a duplicate name throws when the registry is built', () => {
    expect(() => createToolRegistry([{ ...greet, name: 'read_file' }])).toThrow('duplicate tool name read_file');
    expect(() => createToolRegistry([greet, greet])).toThrow('duplicate tool name greet');
  });

  test('a tool whose input is not an object is refused', () => {
    expect(() => createToolRegistry([{ ...greet, input: z.string() } as unknown as Tool])).toThrow(
      'tool greet must take an object as input',
    );
  });

  test('definitions() gives JSON Schema objects with required fields and no $schema key', () => {
    const registry = createToolRegistry([greet]);
    const defs: ToolDefinition[] = registry.definitions(['read_file', 'search', 'write_file', 'git_diff', 'greet']);
    expect(defs.map((d) => d.name)).toEqual(['read_file', 'search', 'write_file', 'git_diff', 'greet']);
    for (const def of defs) {
      expect(def.inputSchema.type).toBe('object');
      expect(def.inputSchema).not.toHaveProperty('$schema');
      expect(def.description).toEqual(expect.any(String));
    }
    expect(defs[0]?.inputSchema.required).toEqual(['path']);
    expect(defs[0]?.inputSchema.properties).toEqual({ path: expect.objectContaining({ type: 'string' }) });
    expect(defs[1]?.inputSchema.required).toEqual(['pattern']);
    expect(defs[2]?.inputSchema.required).toEqual(['path', 'content']);
    expect(defs[3]?.inputSchema.properties).toEqual({});
    // `times` has a default, so the model may leave it out.
    expect(defs[4]?.inputSchema.required).toEqual(['who']);
  });

  test('definitions() of an unknown name throws and lists what exists', () => {
    expect(() => createToolRegistry().definitions(['read_file', 'teleport'])).toThrow(
      /unknown tool teleport: available: read_file, list_files/,
    );
  });
});

describe('executeTool', () => {
  const registry = createToolRegistry([
    greet,
    failing('tool_error', new ToolError('nothing to do here: try read_file')),
    failing('crash', new TypeError('cannot read x of undefined\n    at somewhere (file.ts:1:1)')),
    failing('throws_string', 'plain string'),
  ]);
  const ctx = () => toolContext(root);

  test('runs a tool with its parsed input (defaults applied)', async () => {
    expect(await executeTool(registry, 'greet', { who: 'Ada' }, ctx())).toEqual({
      content: 'hello Ada x1',
      isError: false,
    });
  });

  test('an unknown tool is an error that lists the available tools', async () => {
    const outcome = await executeTool(registry, 'teleport', {}, ctx());
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toBe(`unknown tool teleport: available: ${registry.names().join(', ')}`);
  });

  test('input that fails the schema is an error naming each field', async () => {
    const outcome = await executeTool(registry, 'write_file', { path: 42 }, ctx());
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(
      /^invalid input for write_file:\npath: .*expected string.*\ncontent: .*expected string/,
    );
  });

  test('input that is not an object at all is an error naming the root', async () => {
    const outcome = await executeTool(registry, 'read_file', 'src/a.ts', ctx());
    expect(outcome).toEqual({
      content: expect.stringContaining('(root): Invalid input: expected object'),
      isError: true,
    });
  });

  test('a ToolError comes back with its message as is', async () => {
    expect(await executeTool(registry, 'tool_error', {}, ctx())).toEqual({
      content: 'nothing to do here: try read_file',
      isError: true,
    });
  });

  test('any other error comes back as one line without a stack', async () => {
    expect(await executeTool(registry, 'crash', {}, ctx())).toEqual({
      content: 'crash failed: cannot read x of undefined',
      isError: true,
    });
    expect(await executeTool(registry, 'throws_string', {}, ctx())).toEqual({
      content: 'throws_string failed: plain string',
      isError: true,
    });
  });

  test('an aborted signal is rethrown, not turned into a result', async () => {
    const controller = new AbortController();
    controller.abort(new Error('activity cancelled'));
    await expect(
      executeTool(registry, 'greet', { who: 'Ada' }, { ...ctx(), signal: controller.signal }),
    ).rejects.toThrow('activity cancelled');
  });

  test('a tool that fails because the activity was cancelled rethrows the abort', async () => {
    const controller = new AbortController();
    const aborting: Tool<Record<string, never>> = {
      ...failing('aborting', new Error('interrupted')),
      async run() {
        controller.abort(new Error('activity cancelled'));
        throw new Error('interrupted');
      },
    };
    const local = createToolRegistry([aborting]);
    await expect(executeTool(local, 'aborting', {}, { ...ctx(), signal: controller.signal })).rejects.toThrow(
      'activity cancelled',
    );
  });
});

describe('the deadline of a tool call', () => {
  /** A tool that never settles (an operator's tool waiting on a dead service), recording the signal it got. */
  const seen: AbortSignal[] = [];
  const hang: Tool<Record<string, never>> = {
    name: 'hang',
    description: 'Never answers.',
    class: 'read',
    input: z.object({}),
    run: (_input, ctx) => {
      seen.push(ctx.signal!);
      return new Promise<string>(() => undefined);
    },
  };
  const registry = createToolRegistry([hang]);
  beforeEach(() => seen.splice(0));

  test('a tool that never resolves comes back as a timeout error, and its signal is aborted', async () => {
    const outcome = await executeTool(registry, 'hang', {}, toolContext(root, { deadlineMs: 200 }));
    expect(outcome).toEqual({
      content:
        'hang timed out after 0.2s: the call was stopped; ask for less at once (a narrower path, a smaller file, a simpler pattern)',
      isError: true,
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.aborted).toBe(true);
    expect(seen[0]?.reason).toEqual(
      expect.objectContaining({ name: 'ToolError', message: 'hang timed out after 0.2s' }),
    );
  });

  test('cancelling the activity while a tool hangs rethrows the abort at once, without waiting for the deadline', async () => {
    const controller = new AbortController();
    const pending = executeTool(registry, 'hang', {}, { ...toolContext(root), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('activity cancelled')), 20);
    await expect(pending).rejects.toThrow('activity cancelled');
    expect(seen[0]?.aborted).toBe(true);
  });

  test("heartbeats on the tool's behalf while it runs", async () => {
    let beat: () => void = () => undefined;
    const waitsForBeat: Tool<Record<string, never>> = {
      ...hang,
      name: 'waits_for_beat',
      run: () => new Promise<string>((resolve) => (beat = () => resolve('beaten'))),
    };
    const outcome = await executeTool(
      createToolRegistry([waitsForBeat]),
      'waits_for_beat',
      {},
      { ...toolContext(root), heartbeat: () => beat() },
    );
    expect(outcome).toEqual({ content: 'beaten', isError: false });
  });

  test('a tool that throws synchronously is a failed call, not an exception', async () => {
    const sync: Tool<Record<string, never>> = {
      ...hang,
      name: 'sync_throw',
      run: () => {
        throw new Error('thrown before any promise');
      },
    };
    expect(await executeTool(createToolRegistry([sync]), 'sync_throw', {}, toolContext(root))).toEqual({
      content: 'sync_throw failed: thrown before any promise',
      isError: true,
    });
  });

  test('defaults to 60 s; command tools get their command timeout plus a margin, never less', () => {
    const ctx = toolContext(root, { commandTimeoutMs: 120_000 });
    expect(toolDeadlineMs('read_file', ctx)).toBe(DEFAULT_TOOL_DEADLINE_MS);
    expect(DEFAULT_TOOL_DEADLINE_MS).toBe(60_000);
    expect(toolDeadlineMs('hang', ctx)).toBe(60_000);
    for (const name of ['run_command', 'git_diff', 'git_status'])
      expect(toolDeadlineMs(name, ctx)).toBe(120_000 + COMMAND_DEADLINE_MARGIN_MS);
    expect(toolDeadlineMs('search', { ...ctx, deadlineMs: 5_000 })).toBe(5_000);
    expect(toolDeadlineMs('run_command', { ...ctx, deadlineMs: 5_000 })).toBe(120_000 + COMMAND_DEADLINE_MARGIN_MS);
    expect(toolDeadlineMs('run_command', { ...ctx, deadlineMs: 900_000 })).toBe(900_000);
  });
});
