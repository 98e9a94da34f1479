import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { createModelCaller, type ModelRequest } from '../../activities/model';
import { createModelClient } from '../../activities/providers';
import { MODEL_NON_RETRYABLE, MODEL_RETRYABLE, type ModelFailureDetails } from '../../activities/model-errors';
import type { ModelRule } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { script } from '../helpers/scripts';

/**
 * The model call (activities/model.ts) against the scripted model server over real HTTP, outside
 * Temporal: every fault of a stream becomes a failure that carries exactly the usage the server
 * put on the wire, and the call's own limits cut it when they should.
 */
const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const usage = { input_tokens: 1000, output_tokens: 40, cache_read_input_tokens: 200, cache_creation_input_tokens: 50 };
const reply = {
  content: [{ type: 'text' as const, text: 'The crash is in add(): it subtracts; it should return a + b instead.' }],
  usage,
};
const rule = (extra: Partial<ModelRule>): ModelRule => ({ name: 'r', reply, ...extra }) as ModelRule;

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function call(rules: ModelRule[], timeouts = { totalMs: 30_000, idleMs: 5_000 }) {
  server = await startModelServer({ script: script(...rules), port: 0 });
  const callModel = createModelCaller({
    client: createModelClient({ ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test' }),
  });
  const req: ModelRequest = {
    role: 'worker',
    model: 'claude-test-1',
    workflowId: 'w/1',
    attempt: 1,
    system: 'sys',
    messages: [{ role: 'user', content: 'hi' }],
    maxTokens: 100,
    price,
    timeouts,
  };
  const started = Date.now();
  const outcome = await callModel(req).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  return { outcome, ms: Date.now() - started, sent: server.requests[0] };
}

/** The usage a failure carries, in the run record's terms. */
function carried(error: unknown): ModelFailureDetails['usage'] {
  expect(error instanceof ApplicationFailure || error instanceof CancelledFailure).toBe(true);
  return ((error as ApplicationFailure).details?.[0] as ModelFailureDetails).usage;
}

/** The server's usage in the run record's terms (tokens only). */
const tokens = (
  u:
    | {
        input_tokens: number;
        output_tokens: number;
        cache_read_input_tokens: number;
        cache_creation_input_tokens: number;
      }
    | undefined,
) =>
  u && {
    inputTokens: u.input_tokens,
    outputTokens: u.output_tokens,
    cacheReadTokens: u.cache_read_input_tokens,
    cacheWriteTokens: u.cache_creation_input_tokens,
  };

describe('a model call that breaks carries the usage the endpoint sent', () => {
  test('a complete stream answers with the final usage and its cost', async () => {
    const { outcome, sent } = await call([rule({})]);
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.value.usage).toMatchObject(tokens(sent?.usage)!);
    expect(outcome.value.usage).toMatchObject({ inputTokens: 1000, outputTokens: 40 });
    expect(outcome.value.usage.costUsd).toBeGreaterThan(0);
  });

  test.each([
    [
      'a dropped connection after message_start',
      { kind: 'drop', after: 'message_start' },
      /model stream broke after 1 event/,
      1,
    ],
    ['a dropped connection after three deltas', { kind: 'drop', after: 6 }, /model stream broke after 5 events/, 1],
    [
      'a dropped connection after message_delta',
      { kind: 'drop', after: 'message_delta' },
      /model stream broke after \d+ events/,
      40,
    ],
    [
      'malformed JSON in an event',
      { kind: 'malformed', after: 'content_block_start' },
      /model stream sent an event that is not JSON after 2 events/,
      1,
    ],
    ['an SSE error event', { kind: 'error', after: 4 }, /model stream reported overloaded_error after 3 events/, 1],
  ] as const)('%s: a retryable failure with the usage sent so far', async (_, fault, message, outputTokens) => {
    const { outcome, sent } = await call([rule({ fault: fault as ModelRule['fault'] })]);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    const failure = outcome.error as ApplicationFailure;
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toMatch(message);
    expect(failure.message).toContain('(worker, claude-test-1)');
    expect(carried(failure)).toMatchObject(tokens(sent?.usage)!);
    expect(carried(failure)).toMatchObject({
      inputTokens: 1000,
      cacheReadTokens: 200,
      cacheWriteTokens: 50,
      outputTokens,
    });
    expect(carried(failure)!.costUsd).toBeGreaterThan(0);
  });

  test('an SSE error event of a kind retrying cannot fix is not retried, and still carries the usage', async () => {
    const fault = {
      kind: 'error',
      after: 'message_start',
      error: { type: 'invalid_request_error', message: 'prompt too long' },
    } as const;
    const { outcome, sent } = await call([rule({ fault })]);
    const failure = (outcome as { error: ApplicationFailure }).error;
    expect(failure.type).toBe(MODEL_NON_RETRYABLE);
    expect(failure.message).toMatch(/model stream reported invalid_request_error after 1 event .*prompt too long/);
    expect(carried(failure)).toMatchObject(tokens(sent?.usage)!);
  });

  test('a stream that ends properly but without message_delta is an incomplete answer, not a reply', async () => {
    const { outcome, sent } = await call([rule({ fault: { kind: 'end', after: 'content_block_stop' } })]);
    const failure = (outcome as { error: ApplicationFailure }).error;
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(failure.message).toMatch(
      /model stream ended without a stop_reason after 8 events .*the answer is incomplete/,
    );
    expect(carried(failure)).toMatchObject(tokens(sent?.usage)!);
  });
});

describe('the call enforces its own limits', () => {
  test('a stall after message_start is cut at the idle limit (2 s) and charges message_start', async () => {
    const { outcome, ms, sent } = await call([rule({ fault: { kind: 'stall', after: 'message_start' } })], {
      totalMs: 30_000,
      idleMs: 2_000,
    });
    const failure = (outcome as { error: ApplicationFailure }).error;
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(failure.message).toMatch(/model stream idle: no stream event for 2s \(the idle limit\) after 1 event/);
    expect(ms).toBeGreaterThanOrEqual(1_950);
    // far below the 30 s total deadline, the other limit that could have cut it (slack for load)
    expect(ms).toBeLessThan(10_000);
    expect(carried(failure)).toMatchObject({ ...tokens(sent?.usage)!, outputTokens: 1 });
  });

  test('a stall before the headers is cut at the idle limit with nothing to charge', async () => {
    const { outcome, ms } = await call([rule({ delayMs: 20_000 })], { totalMs: 30_000, idleMs: 1_500 });
    const failure = (outcome as { error: ApplicationFailure }).error;
    expect(failure.message).toMatch(/model stream idle: no response headers for 1.5s/);
    expect(ms).toBeGreaterThanOrEqual(1_450);
    // far below the 20 s the server would take to answer (slack for load)
    expect(ms).toBeLessThan(10_000);
    expect(carried(failure)).toBeUndefined();
    // the server saw the client leave
    for (let i = 0; i < 40 && server!.requests[0]?.status !== 499; i++) await new Promise((r) => setTimeout(r, 50));
    expect(server!.requests[0]?.status).toBe(499);
  });

  test('a slow stream whose events keep coming is not idle, and is cut at the total deadline', async () => {
    const { outcome, ms, sent } = await call([rule({ eventDelayMs: 400 })], { totalMs: 2_500, idleMs: 1_000 });
    const failure = (outcome as { error: ApplicationFailure }).error;
    expect(failure.message).toMatch(/model call passed its total deadline of 2.5s after \d+ events/);
    expect(ms).toBeGreaterThanOrEqual(2_450);
    expect(ms).toBeLessThan(4_000);
    expect(carried(failure)).toMatchObject(tokens(sent?.usage)!);
  });

  test('a slow stream within both limits answers', async () => {
    const { outcome } = await call([rule({ eventDelayMs: 300 })], { totalMs: 10_000, idleMs: 1_000 });
    expect(outcome.ok).toBe(true);
  });
});
