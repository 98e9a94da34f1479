import { MockActivityEnvironment } from '@temporalio/testing';
import { createModelCaller, type ModelRequest } from '../../activities/model';
import type { ModelClient } from '../../activities/model-port';

/**
 * When a model call heartbeats: not in its first interval (each heartbeat is a server write, and a
 * call that answers at once needs none), then every interval, each heartbeat carrying the usage the
 * provider reported so far, so a worker lost mid-call leaves it in the last heartbeat's details.
 */
const EVERY = 200;
const TOKENS = { inputTokens: 1000, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A provider that reports its input tokens after `usageAfter` ms and answers after `doneAfter` ms. */
function provider(usageAfter: number, doneAfter: number): ModelClient {
  return {
    provider: 'test',
    async call(_call, control) {
      await sleep(usageAfter);
      control.onUsage?.(TOKENS);
      await sleep(doneAfter - usageAfter);
      return { content: [{ type: 'text', text: 'ok' }], stopReason: 'end_turn', tokens: TOKENS };
    },
  };
}

const request: ModelRequest = {
  role: 'worker',
  model: 'm',
  workflowId: 'wf',
  attempt: 1,
  system: 's',
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 10,
  price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
};

/** Runs one call as an activity and returns the details of every heartbeat it sent. */
async function heartbeatsOf(client: ModelClient): Promise<unknown[]> {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (details: unknown) => beats.push(details));
  const call = createModelCaller({ client, heartbeatMs: EVERY });
  const reply = (await env.run(call, request)) as Awaited<ReturnType<typeof call>>;
  expect(reply.text).toBe('ok');
  return beats;
}

test('a call that answers within its first interval sends no heartbeat', async () => {
  expect(await heartbeatsOf(provider(10, 60))).toEqual([]);
});

test('a longer call heartbeats each interval from the first on, with the usage reported early in the call', async () => {
  const beats = await heartbeatsOf(provider(10, EVERY * 3 + 100));
  expect(beats.length).toBeGreaterThanOrEqual(3);
  // On a loaded machine the first interval can fire before the provider's 10 ms report is
  // handled; from the report on, every heartbeat carries it.
  const from = beats.findIndex((d) => d !== undefined);
  expect(from).toBeGreaterThanOrEqual(0);
  expect(from).toBeLessThanOrEqual(1);
  for (const details of beats.slice(from))
    expect(details).toMatchObject({ usage: { inputTokens: 1000, outputTokens: 5 } });
});

test('usage reported after the first interval is heartbeated at once', async () => {
  const beats = await heartbeatsOf(provider(EVERY + 120, EVERY + 150));
  // The liveness heartbeat at the first interval has nothing to carry yet; the usage follows it at once.
  expect(beats).toEqual([undefined, { usage: expect.objectContaining({ inputTokens: 1000 }) }]);
});
