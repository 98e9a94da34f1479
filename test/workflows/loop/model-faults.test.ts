import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { costOf } from '../../../common/pricing';
import type { RunRecord } from '../../../common/run-record';
import type { ModelRule } from '../../../model-server/script';
import type { ModelServer } from '../../../model-server/server';
import { turnAnswers } from '../../helpers/agent-scripts';
import { judgeSays, workerSays } from '../../helpers/scripts';
import { scriptedStacks, type TestStack } from '../../helpers/temporal';
import { mustTake } from '../../../common/must';

/**
 * Every answered token charged: a model call cut off mid-stream, on a real dev server with the
 * scripted model as the endpoint, charges exactly the tokens the endpoint put on the wire, its
 * retries are bounded, and the run ends in a defined state with the reason.
 */
const setup = scriptedStacks();

const FAULT_USAGE = {
  input_tokens: 1000,
  output_tokens: 40,
  cache_read_input_tokens: 200,
  cache_creation_input_tokens: 50,
};
const TEXT = 'The crash is in add(): it subtracts; it should return a + b instead.'; // 5 deltas
const faulty = (extra: Partial<ModelRule>, match: ModelRule['match'] = { role: 'worker', attempt: 1 }): ModelRule =>
  ({
    name: `faulty ${JSON.stringify(extra)}`,
    match,
    times: 1,
    reply: { content: [{ type: 'text', text: TEXT }], usage: FAULT_USAGE },
    ...extra,
  }) as ModelRule;
const task = (extra: Record<string, unknown> = {}) => ({
  task: 'Name the crash.',
  rubric: ['mentions a crash'],
  modelTimeouts: { total: '5s', idle: '2s' },
  ...extra,
});

/** What the endpoint reported to `role` over all its answers, as the record should charge it. */
function reported(model: ModelServer, role: string) {
  const total = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  for (const r of model.requests.filter((q) => q.role === role && q.usage)) {
    const u = r.usage!;
    const tokens = {
      inputTokens: u.input_tokens,
      outputTokens: u.output_tokens,
      cacheReadTokens: u.cache_read_input_tokens,
      cacheWriteTokens: u.cache_creation_input_tokens,
    };
    total.inputTokens += tokens.inputTokens;
    total.outputTokens += tokens.outputTokens;
    total.cacheReadTokens += tokens.cacheReadTokens;
    total.cacheWriteTokens += tokens.cacheWriteTokens;
    total.costUsd += costOf(r.model, tokens);
  }
  return total;
}

function expectCharged(record: RunRecord, model: ModelServer, role: 'worker' | 'checker') {
  const { costUsd, ...tokens } = reported(model, role);
  expect(record.usage[role]).toMatchObject(tokens);
  expect(record.usage[role].costUsd).toBeCloseTo(costUsd, 5);
}

const runToEnd = (stack: TestStack, input: Record<string, unknown>) =>
  stack.run(async () => stack.client.wait((await stack.client.run('evaluate-optimize', input)).workflowId));
const gapMs = (model: ModelServer, role: string) => {
  const [a, b] = mustTake(
    model.requests.filter((r) => r.role === role),
    2,
    `two ${role} requests`,
  );
  return Date.parse(b.at) - Date.parse(a.at);
};

describe('a worker call cut off mid-stream is charged what the endpoint reported, then retried', () => {
  test.each([
    ['the connection dropped after message_start', { fault: { kind: 'drop', after: 'message_start' } }, 1],
    ['the connection dropped after three deltas', { fault: { kind: 'drop', after: 6 } }, 1],
    [
      'the connection dropped after message_delta (the final usage)',
      { fault: { kind: 'drop', after: 'message_delta' } },
      40,
    ],
    ['the response ended early, without message_delta', { fault: { kind: 'end', after: 'content_block_stop' } }, 1],
    ['malformed JSON in an event', { fault: { kind: 'malformed', after: 'content_block_start' } }, 1],
    ['an SSE error event after message_start', { fault: { kind: 'error', after: 'message_start' } }, 1],
    [
      'a stall after message_start, cut by the 2 s idle timeout',
      { fault: { kind: 'stall', after: 'message_start' } },
      1,
    ],
    ['a slow stream cut by the 5 s total deadline', { eventDelayMs: 700 }, 1],
  ] as const)('%s', async (_, fault, outputTokens) => {
    const { model, stack } = await setup(
      `fault-${'fault' in fault ? fault.fault.kind : 'slow'}`,
      faulty(fault as Partial<ModelRule>),
      workerSays(1, 'a crash'),
      judgeSays(1, true),
    );
    const record = await runToEnd(stack, task());
    expect(record).toMatchObject({ state: 'completed', stopReason: 'passed' });
    const tries = model.requests.filter((r) => r.role === 'worker');
    expect(tries.map((r) => r.rule)).toEqual([expect.stringMatching(/^faulty/), 'worker 1']);
    expect(tries[0]?.usage).toMatchObject({ input_tokens: 1000, output_tokens: outputTokens });
    expectCharged(record, model, 'worker');
    expect(record.usage.worker.inputTokens).toBe(1100);
    expect(record.usage.worker.outputTokens).toBe(outputTokens + 20);
    expectCharged(record, model, 'checker');
  });

  test('a stall before the response headers is cut by the idle timeout (2 s), charges nothing, and is retried', async () => {
    const { model, stack } = await setup(
      'fault-headers',
      faulty({ delayMs: 30_000 }),
      workerSays(1, 'a crash'),
      judgeSays(1, true),
    );
    const record = await runToEnd(stack, task());
    expect(record.state).toBe('completed');
    // the idle cut (2 s) plus the first backoff (1 s)
    expect(gapMs(model, 'worker')).toBeGreaterThanOrEqual(2_900);
    expect(gapMs(model, 'worker')).toBeLessThan(5_000);
    expect(record.usage.worker).toMatchObject({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 0 });
  });

  test('the idle timeout fires at its configured value: 2 s of silence after message_start, then the retry', async () => {
    const { model, stack } = await setup(
      'fault-idle',
      faulty({ fault: { kind: 'stall', after: 'message_start' } }),
      workerSays(1, 'a crash'),
      judgeSays(1, true),
    );
    await runToEnd(stack, task({ modelTimeouts: { idle: '2s' } }));
    expect(gapMs(model, 'worker')).toBeGreaterThanOrEqual(2_900);
    expect(gapMs(model, 'worker')).toBeLessThan(5_000);
  });
});

describe('bounded retries and a defined end', () => {
  test('a model that stalls after message_start on every try: five tries, each charged, then escalation with the reason, then blocked', async () => {
    const stall = { ...faulty({ fault: { kind: 'stall', after: 'message_start' } }), times: undefined } as ModelRule;
    const { model, stack } = await setup('fault-every-try', stall);
    const started = Date.now();
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', task({ escalationTimeout: '1s' }));
      for (;;) {
        const r = await stack.client.status(workflowId);
        if (r.state === 'blocked') return r;
        await new Promise((res) => setTimeout(res, 200));
      }
    });
    // 5 × 2 s idle + backoff 1 + 2 + 4 + 8 s, far from the 25 minutes of a hang per undici's default
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(record).toMatchObject({
      state: 'blocked',
      stopReason: 'model_error',
      escalation: { kind: 'error', timedOut: true },
    });
    expect(record.escalation?.reason).toMatch(
      /worker model call \(attempt 1\) failed 5 times; last error: model stream idle: no stream event for 2s \(the idle limit\) after 1 event/,
    );
    expect(model.requests.filter((r) => r.role === 'worker')).toHaveLength(5);
    expectCharged(record, model, 'worker');
    expect(record.usage.worker).toMatchObject({
      inputTokens: 5_000,
      outputTokens: 5,
      cacheReadTokens: 1_000,
      cacheWriteTokens: 250,
    });
  }, 90_000);

  test('wall time running out cancels a call that already had message_start: its usage is charged', async () => {
    const stall = faulty({ fault: { kind: 'stall', after: 'message_start' } });
    const { model, stack } = await setup('fault-wall-time', stall);
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run(
        'evaluate-optimize',
        task({ modelTimeouts: { idle: '60s' }, budget: { maxWallTime: '3s' }, escalationTimeout: '1s' }),
      );
      for (;;) {
        const r = await stack.client.status(workflowId);
        if (r.state === 'budget_exhausted') return r;
        await new Promise((res) => setTimeout(res, 200));
      }
    });
    expect(record).toMatchObject({ state: 'budget_exhausted', stopReason: 'time' });
    expect(model.requests).toHaveLength(1);
    expectCharged(record, model, 'worker');
    expect(record.usage.worker).toMatchObject({ inputTokens: 1_000, outputTokens: 1 });
  });
});

describe('judge and agent turns are charged the same way', () => {
  test("a judge's stream dropped after message_start is charged to the checker", async () => {
    const judgeFault = faulty({ fault: { kind: 'drop', after: 'message_start' } }, { role: 'checker', attempt: 1 });
    const { model, stack } = await setup('fault-judge', workerSays(1, 'a crash'), judgeFault, judgeSays(1, true));
    const record = await runToEnd(stack, task());
    expect(record.state).toBe('completed');
    expect(model.requests.filter((r) => r.role === 'checker')).toHaveLength(2);
    expectCharged(record, model, 'checker');
    expect(record.usage.checker).toMatchObject({ inputTokens: 1_050, outputTokens: 11 });
  });

  test("an agent turn's SSE error event is charged to the worker and the turn retried", async () => {
    const workspace = mkdtempSync(path.join(tmpdir(), 'lw-fault-'));
    writeFileSync(path.join(workspace, 'a.txt'), 'alpha\n');
    const turnFault = faulty(
      { fault: { kind: 'error', after: 'message_start' } },
      { role: 'worker', attempt: 1, turn: 1 },
    );
    const { model, stack } = await setup('fault-turn', turnFault, turnAnswers(1, 'a crash'), judgeSays(1, true));
    const record = await runToEnd(stack, task({ tools: ['read_file'], workspace }));
    expect(record.state).toBe('completed');
    expect(model.requests.filter((r) => r.role === 'worker').map((r) => r.turn)).toEqual([1, 1]);
    expectCharged(record, model, 'worker');
    expect(record.usage.worker).toMatchObject({ inputTokens: 1_300, outputTokens: 41 });
  });
});
