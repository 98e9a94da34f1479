import { ApplicationFailure } from '@temporalio/common';
import { createModelCaller, type ModelRequest } from '../../activities/model';
import type { ModelFailureDetails } from '../../activities/model-errors';
import { withCallLimits } from '../../activities/model-limits';
import { ModelCallError, type ModelCall, type ModelCallControl, type ModelClient } from '../../activities/model-port';
import { createModelClient } from '../../activities/providers';
import { VERDICT_TOOL, VERDICT_TOOL_NAME } from '../../common/judge';
import type { ToolDefinition } from '../../common/model-messages';
import { ConfigError } from '../../common/errors';
import type { ModelRule } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { script } from '../helpers/scripts';
import { must } from '../../common/must';

/**
 * The model port (activities/model-port.ts): the caller speaks only Loopwright's types, and the
 * Anthropic adapter maps them to the Messages API (tools, tool choice, prompt caching, headers)
 * and the answer back, against the scripted model server over real HTTP.
 */
const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const base: Omit<ModelRequest, 'messages'> = {
  role: 'checker',
  model: 'claude-test-1',
  workflowId: 'w/1',
  attempt: 2,
  turn: 3,
  system: 'sys',
  maxTokens: 100,
  price,
};
const greet: ToolDefinition = {
  name: 'greet',
  description: 'Greets.',
  inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
};

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('the Anthropic adapter behind the model port', () => {
  test('sends Loopwright tools, tool choice and blocks as the Messages API takes them, with the cacheable prefix marked and the caller in headers', async () => {
    const verdict = { passed: true, reason: 'ok', failed_items: [], required_correction: '' };
    const rule = {
      name: 'judge',
      reply: {
        content: [
          { type: 'text', text: 'Verdict: ' },
          { type: 'tool_use', name: VERDICT_TOOL_NAME, input: verdict },
        ],
        usage: { input_tokens: 10, output_tokens: 5 },
      },
    } as ModelRule;
    server = await startModelServer({ script: script(rule), port: 0 });
    const callModel = createModelCaller({
      client: createModelClient({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test' }),
    });
    const reply = await callModel({
      ...base,
      messages: [
        { role: 'user', content: 'judge it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'greet', input: { who: 'x' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'hello x', is_error: true }],
        },
      ],
      tools: [greet, VERDICT_TOOL],
      toolChoice: { type: 'tool', name: VERDICT_TOOL_NAME },
    });

    const sent = must(server.requests[0], 'the server saw the request');
    expect(sent).toMatchObject({ role: 'checker', attempt: 2, turn: 3, workflowId: 'w/1', model: 'claude-test-1' });
    const body = sent.body as Record<string, unknown>;
    expect(body.system).toEqual([{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }]);
    expect(body.tools).toEqual([
      { name: 'greet', description: 'Greets.', input_schema: greet.inputSchema },
      {
        name: VERDICT_TOOL_NAME,
        description: VERDICT_TOOL.description,
        input_schema: VERDICT_TOOL.inputSchema,
        cache_control: { type: 'ephemeral' },
      },
    ]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: VERDICT_TOOL_NAME });
    expect(body.max_tokens).toBe(100);
    expect(body.messages).toEqual([
      { role: 'user', content: 'judge it' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'greet', input: { who: 'x' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'hello x', is_error: true }] },
    ]);

    expect(reply.content).toEqual([
      { type: 'text', text: 'Verdict: ' },
      { type: 'tool_use', id: expect.any(String), name: VERDICT_TOOL_NAME, input: verdict },
    ]);
    expect(reply.text).toBe('Verdict: ');
    expect(reply.stopReason).toBe('tool_use');
    expect(reply.usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    expect(reply.usage.costUsd).toBeCloseTo((10 * 3 + 5 * 15) / 1e6, 9);
  });

  test('a call without tools sends neither tools nor tool_choice', async () => {
    server = await startModelServer({
      script: script({
        name: 'w',
        reply: { content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 1, output_tokens: 1 } },
      } as ModelRule),
      port: 0,
    });
    const callModel = createModelCaller({
      client: createModelClient({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test' }),
    });
    const reply = await callModel({ ...base, messages: [{ role: 'user', content: 'hi' }] });
    expect(reply).toMatchObject({ text: 'hi', stopReason: 'end_turn' });
    expect(server.requests[0]?.body).not.toHaveProperty('tools');
    expect(server.requests[0]?.body).not.toHaveProperty('tool_choice');
  });
});

describe('the model caller depends only on the port', () => {
  /** A provider that reports usage, then breaks or answers, as a test double of the port. */
  function fakeProvider(outcome: 'answer' | 'break'): ModelClient & { calls: ModelCall[] } {
    const calls: ModelCall[] = [];
    return {
      provider: 'fake',
      calls,
      async call(call: ModelCall, control: ModelCallControl) {
        calls.push(call);
        control.onUsage?.({ inputTokens: 1000, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 });
        control.onUsage?.({ inputTokens: 1000, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0 });
        if (outcome === 'break')
          throw new ModelCallError(
            { kind: 'broken', message: 'connection reset' },
            { connected: true, events: 7, elapsedMs: 1_200, limits: control.limits },
          );
        return {
          content: [{ type: 'text', text: 'done' }],
          stopReason: 'end_turn',
          tokens: { inputTokens: 1000, outputTokens: 41, cacheReadTokens: 0, cacheWriteTokens: 0 },
        };
      },
    };
  }

  test("another provider's answer is priced at the pinned price, and the caller is passed as Loopwright's types", async () => {
    const provider = fakeProvider('answer');
    const reply = await createModelCaller({ client: provider })({
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [greet],
      toolChoice: { type: 'auto' },
    });
    expect(reply).toMatchObject({
      text: 'done',
      stopReason: 'end_turn',
      usage: { inputTokens: 1000, outputTokens: 41 },
    });
    expect(reply.usage.costUsd).toBeCloseTo((1000 * 3 + 41 * 15) / 1e6, 9);
    expect(provider.calls[0]).toMatchObject({
      model: 'claude-test-1',
      system: 'sys',
      maxTokens: 100,
      tools: [greet],
      toolChoice: { type: 'auto' },
      caller: { workflowId: 'w/1', role: 'checker', attempt: 2, turn: 3 },
    });
  });

  test("another provider's broken call is a retryable failure charged with the last usage it reported", async () => {
    const error = await createModelCaller({ client: fakeProvider('break') })({
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe('ModelRetryableError');
    expect(failure.message).toBe(
      'model stream broke after 7 events in 1.2s (checker, claude-test-1): connection reset',
    );
    expect((failure.details?.[0] as ModelFailureDetails).usage).toMatchObject({ inputTokens: 1000, outputTokens: 40 });
  });
});

describe("the call limits any provider's stream runs under (model-limits.ts)", () => {
  /** A provider whose stream connects, sends up to `events` events 20 ms apart, then goes quiet; it fails with the watch's facts once a limit cuts it. */
  const stalling = (events: number): ModelClient => ({
    provider: 'stalling',
    call: (_call, control) =>
      withCallLimits(control.limits, control.signal, async (watch) => {
        watch.connected();
        for (let i = 0; i < events && !watch.signal.aborted; i++) {
          await new Promise((r) => setTimeout(r, 20));
          watch.event();
          control.onUsage?.({ inputTokens: 500, outputTokens: i + 1, cacheReadTokens: 0, cacheWriteTokens: 0 });
        }
        if (!watch.signal.aborted) await new Promise((r) => watch.signal.addEventListener('abort', r, { once: true }));
        throw new ModelCallError({ kind: 'broken', message: 'aborted' }, watch.facts());
      }),
  });
  const callWith = (events: number, timeouts: { totalMs: number; idleMs: number }) =>
    createModelCaller({ client: stalling(events) })({
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
      timeouts,
    }).then(
      () => {
        throw new Error('the call answered; a limit should have cut it');
      },
      (e: unknown) => e as ApplicationFailure,
    );

  test('a stream that goes quiet is cut at the idle limit, retryable, and charged what it reported', async () => {
    const failure = await callWith(3, { totalMs: 10_000, idleMs: 200 });
    expect(failure.type).toBe('ModelRetryableError');
    expect(failure.message).toMatch(
      /^model stream idle: no stream event for 0.2s \(the idle limit\) after 3 events in [\d.]+s \(checker, claude-test-1\)$/,
    );
    expect((failure.details?.[0] as ModelFailureDetails).usage).toMatchObject({ inputTokens: 500, outputTokens: 3 });
  });

  test('a stream that keeps talking past the total deadline is cut there', async () => {
    const failure = await callWith(1000, { totalMs: 300, idleMs: 200 });
    expect(failure.type).toBe('ModelRetryableError');
    expect(failure.message).toMatch(
      /^model call passed its total deadline of 0.3s after \d+ events in [\d.]+s \(checker, claude-test-1\)$/,
    );
  });
});

describe('createModelClient', () => {
  test('gives the Anthropic adapter by default and refuses an unknown provider, naming the known ones', () => {
    expect(createModelClient({}).provider).toBe('anthropic');
    expect(createModelClient({ LOOPWRIGHT_MODEL_PROVIDER: 'anthropic' }).provider).toBe('anthropic');
    expect(() => createModelClient({ LOOPWRIGHT_MODEL_PROVIDER: 'toString' })).toThrow(ConfigError);
    expect(() => createModelClient({ LOOPWRIGHT_MODEL_PROVIDER: 'acme' })).toThrow(
      'unknown model provider acme (LOOPWRIGHT_MODEL_PROVIDER): known providers are anthropic',
    );
  });
});
