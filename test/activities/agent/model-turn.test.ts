import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { modelTurn } from '../../../activities/agent/model-turn';
import { runTool } from '../../../activities/agent/run-tool';
import type { ModelReply, ModelRequest } from '../../../activities/model';
import { createToolRegistry } from '../../../activities/tools/registry';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { loadTranscript } from '../../../activities/transcript/transcript';
import { must, mustTake } from '../../../common/must';

/** The agent activities outside Temporal, with a recording stand-in for the model call. */
const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };

function setup() {
  const store = createFileBlobStore(mkdtempSync(path.join(tmpdir(), 'lw-store-')));
  const registry = createToolRegistry();
  const seen: ModelRequest[] = [];
  const replies: ModelReply[] = [];
  const callModel = async (req: ModelRequest): Promise<ModelReply> => {
    seen.push(req);
    const reply = replies.shift();
    if (!reply) throw new Error(`the stand-in model has no reply left for request ${seen.length}`);
    return reply;
  };
  const deps = { store, callModel, definitions: (names: string[]) => registry.definitions(names) as never };
  const base = {
    workflowId: 'w',
    attempt: 1,
    model: 'm',
    price,
    systemPrompt: 'sys',
    toolNames: ['read_file'],
    maxTokens: 100,
  };
  return { store, registry, seen, replies, deps, base };
}

const toolUse = (id: string, filePath: string): ModelReply => ({
  content: [{ type: 'tool_use', id, name: 'read_file', input: { path: filePath } }],
  text: '',
  stopReason: 'tool_use',
  usage,
});

test('a large tool output reaches the model as a capped preview with a reference to the full text', async () => {
  const { store, registry, seen, replies, deps, base } = setup();
  const root = mkdtempSync(path.join(tmpdir(), 'lw-ws-'));
  writeFileSync(path.join(root, 'big.txt'), 'x'.repeat(60_000));
  replies.push(toolUse('t1', 'big.txt'), {
    content: [{ type: 'text', text: 'done' }],
    text: 'done',
    stopReason: 'end_turn',
    usage,
  });
  const turn1 = await modelTurn(deps, {
    ...base,
    turn: 1,
    head: null,
    userText: 'read big.txt',
    contextBudgetChars: 1e6,
  });
  expect(turn1.toolCalls).toEqual([{ id: 't1', name: 'read_file', summary: 'big.txt' }]);
  const result = await runTool(
    { store, registry },
    {
      workflowId: 'w',
      attempt: 1,
      turn: 1,
      assistantHead: turn1.head,
      toolUseId: 't1',
      name: 'read_file',
      root,
      autonomy: 'L1',
      available: ['read_file'],
      allowedCommands: [],
      commandTimeoutMs: 1000,
      outputCapChars: 5000,
    },
  );
  expect(result.bytes).toBe(60_000);
  const turn2 = await modelTurn(deps, {
    ...base,
    turn: 2,
    head: turn1.head,
    toolResults: [result],
    contextBudgetChars: 1e6,
  });
  expect(turn2.text).toBe('done');
  const sent = JSON.stringify(must(seen[1], 'the second turn was sent').messages);
  expect(sent).toMatch(/characters cut; full output stored as sha256:[0-9a-f]{64}/);
  expect(sent.length).toBeLessThan(6_500);
  expect(await loadTranscript(store, turn2.head)).toHaveLength(4);
});

test('old tool results are elided when the conversation passes the context budget, the newest kept', async () => {
  const { store, registry, seen, replies, deps, base } = setup();
  const root = mkdtempSync(path.join(tmpdir(), 'lw-ws-'));
  for (const f of ['a', 'b', 'c', 'd']) writeFileSync(path.join(root, `${f}.txt`), f.repeat(4_000));
  let head: string | null = null;
  let results: Awaited<ReturnType<typeof runTool>>[] | undefined;
  for (const [i, f] of ['a', 'b', 'c', 'd'].entries()) {
    replies.push(toolUse(`t${i}`, `${f}.txt`));
    const turn = await modelTurn(deps, {
      ...base,
      turn: i + 1,
      head,
      userText: i === 0 ? 'read them all' : undefined,
      toolResults: results,
      contextBudgetChars: 10_000,
    });
    head = turn.head;
    results = [
      await runTool(
        { store, registry },
        {
          workflowId: 'w',
          attempt: 1,
          turn: i + 1,
          assistantHead: head,
          toolUseId: `t${i}`,
          name: 'read_file',
          root,
          autonomy: 'L1',
          available: ['read_file'],
          allowedCommands: [],
          commandTimeoutMs: 1000,
          outputCapChars: 20_000,
        },
      ),
    ];
  }
  replies.push({ content: [{ type: 'text', text: 'ok' }], text: 'ok', stopReason: 'end_turn', usage });
  const last = await modelTurn(deps, { ...base, turn: 5, head, toolResults: results, contextBudgetChars: 10_000 });
  expect(last.elided).toBeGreaterThan(0);
  const sent = JSON.stringify(must(seen[4], 'the fifth turn was sent').messages);
  expect(sent).toContain('[elided: 4000 characters of an earlier tool result]');
  expect(sent).toContain('d'.repeat(4_000));
  expect(sent).not.toContain('a'.repeat(4_000));
  // the store keeps everything: elision only shapes what the model is sent
  expect(JSON.stringify(await loadTranscript(store, last.head))).toContain('a'.repeat(4_000));
});

test('the worker refuses a tool call the autonomy level forbids, even when the workflow asked for it', async () => {
  const { store, registry, replies, deps, base } = setup();
  const root = mkdtempSync(path.join(tmpdir(), 'lw-ws-'));
  replies.push({
    content: [{ type: 'tool_use', id: 'w1', name: 'write_file', input: { path: 'x.txt', content: 'x' } }],
    text: '',
    stopReason: 'tool_use',
    usage,
  });
  const turn = await modelTurn(deps, { ...base, turn: 1, head: null, userText: 'write', contextBudgetChars: 1e6 });
  const result = await runTool(
    { store, registry },
    {
      workflowId: 'w',
      attempt: 1,
      turn: 1,
      assistantHead: turn.head,
      toolUseId: 'w1',
      name: 'write_file',
      root,
      autonomy: 'L1',
      available: ['write_file'],
      allowedCommands: [],
      commandTimeoutMs: 1000,
      outputCapChars: 5000,
    },
  );
  expect(result.isError).toBe(true);
  expect(result.preview).toMatch(/^denied: write_file is a write tool and this run is L1/);
});

test("a harness's tool descriptions replace the built-in ones in what the model is offered; the schema is unchanged", async () => {
  const { seen, replies, deps, base, registry } = setup();
  replies.push(
    { content: [{ type: 'text', text: 'ok' }], text: 'ok', stopReason: 'end_turn', usage },
    { content: [{ type: 'text', text: 'ok' }], text: 'ok', stopReason: 'end_turn', usage },
  );
  await modelTurn(deps, { ...base, turn: 1, head: null, userText: 'go', contextBudgetChars: 1e6 });
  await modelTurn(deps, {
    ...base,
    turn: 1,
    head: null,
    userText: 'go',
    contextBudgetChars: 1e6,
    toolDescriptions: { read_file: 'Read a file; read the test first.' },
  });
  const [builtIn] = mustTake(registry.definitions(['read_file']), 1, 'read_file is built in');
  expect(seen[0]?.tools).toEqual([expect.objectContaining({ name: 'read_file', description: builtIn.description })]);
  expect(seen[1]?.tools).toEqual([{ ...builtIn, description: 'Read a file; read the test first.' }]);
});

test("the turn's model call gets the loop's limits, and a failed call's failure (with its usage) reaches the activity's caller unchanged", async () => {
  const { seen, replies, deps, base } = setup();
  const timeouts = { totalMs: 5_000, idleMs: 2_000 };
  replies.push({ content: [{ type: 'text', text: 'ok' }], text: 'ok', stopReason: 'end_turn', usage });
  await modelTurn(deps, { ...base, turn: 1, head: null, userText: 'go', contextBudgetChars: 1e6, timeouts });
  expect(seen[0]?.timeouts).toEqual(timeouts);
  const failure = new Error('model stream broke after 1 event');
  const failing = { ...deps, callModel: async () => Promise.reject(failure) };
  await expect(
    modelTurn(failing, { ...base, turn: 1, head: null, userText: 'go', contextBudgetChars: 1e6, timeouts }),
  ).rejects.toBe(failure);
});
