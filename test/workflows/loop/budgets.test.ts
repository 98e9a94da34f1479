import { Context } from '@temporalio/activity';
import { heartbeatAlive } from '../../../activities/model-heartbeat';
import type { ModelServer } from '../../../model-server/server';
import type { ModelRule } from '../../../model-server/script';
import { judgeSays, workerSays } from '../../helpers/scripts';
import { scriptedStacks, type TestStack } from '../../helpers/temporal';
import { must, mustTake } from '../../../common/must';

/** Budgets and accounting on a real dev server with the scripted model as a real HTTP peer. */
const setup = scriptedStacks();

const task = (extra: Record<string, unknown>) => ({ task: 'Name the crash.', rubric: ['mentions a crash'], ...extra });
const workerRequests = (m: ModelServer) => m.requests.filter((r) => r.role === 'worker');
const until = async (s: TestStack, id: string, pred: (state: string) => boolean) => {
  for (;;) {
    const r = await s.client.status(id);
    if (pred(r.state)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
};

describe('budgets enforced in code', () => {
  test('a token budget that cannot pay for the next call stops before it is made, and an extension resumes the run', async () => {
    const bigJudge = judgeSays(1, false, ['mentions a crash'], 'Name it.');
    (bigJudge as { reply: { usage: object } }).reply.usage = { input_tokens: 650, output_tokens: 10 };
    const { model, stack } = await setup(
      'tokens',
      workerSays(1, 'no'),
      bigJudge,
      workerSays(3, 'a crash'),
      judgeSays(3, true),
    );
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run(
        'evaluate-optimize',
        task({ maxAttempts: 5, budget: { maxTokens: 1000 } }),
      );
      const waiting = await stack.client.wait(workflowId);
      expect(waiting).toMatchObject({
        state: 'awaiting_human',
        stopReason: 'tokens',
        escalation: { kind: 'budget', stopReason: 'tokens' },
      });
      expect(waiting.attempts[1]?.stopped?.reason).toBe('tokens');
      expect(waiting.attempts[1]?.reasons[0]).toMatch(
        /worker model call \(attempt 2\) not made: it may need up to \d+ tokens and 220 are left/,
      );
      expect(workerRequests(model)).toHaveLength(1);
      expect(waiting.budget.used.tokens).toBe(780);
      await stack.client.decide(workflowId, { kind: 'extend', by: 'ada', tokens: 20_000 });
      return stack.client.wait(workflowId);
    });
    expect(record).toMatchObject({ state: 'completed', stopReason: 'passed', budget: { maxTokens: 21_000 } });
    expect(record.budget.extensions).toEqual([expect.objectContaining({ by: 'ada', tokens: 20_000 })]);
    expect(record.attempts.map((a) => [a.n, a.passed, a.stopped?.reason ?? null])).toEqual([
      [1, false, null],
      [2, false, 'tokens'],
      [3, true, null],
    ]);
    expect(workerRequests(model)).toHaveLength(2);
  });

  test('max_tokens is lowered to what the remaining token budget can pay for', async () => {
    const { model, stack } = await setup('max-tokens', workerSays(1, 'a crash'), judgeSays(1, true));
    await stack.run(async () =>
      stack.client.wait(
        (await stack.client.run('evaluate-optimize', task({ budget: { maxTokens: 1500 } }))).workflowId,
      ),
    );
    const sent = must(workerRequests(model)[0], 'the worker was called').body as { max_tokens: number };
    expect(sent.max_tokens).toBeLessThan(1500);
    expect(sent.max_tokens).toBeGreaterThan(1000);
  });

  test('a cost budget too small for any call makes no model call and escalates with stopReason cost', async () => {
    const { model, stack } = await setup('cost', workerSays(1, 'never sent'));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', task({ budget: { maxCostUsd: 0.0001 } }));
      const waiting = await stack.client.wait(workflowId);
      expect(waiting).toMatchObject({ state: 'awaiting_human', stopReason: 'cost' });
      await expect(stack.client.decide(workflowId, { kind: 'approve', by: 'ada' })).rejects.toThrow(
        /no candidate to approve/,
      );
      await stack.client.decide(workflowId, { kind: 'reject', by: 'ada', reason: 'too expensive' });
      return stack.client.wait(workflowId);
    });
    expect(record).toMatchObject({ state: 'rejected', stopReason: 'rejected' });
    expect(model.requests).toHaveLength(0);
  });

  test('wall time running out cancels the attempt, and the cancellation reaches the model call', async () => {
    const { model, stack } = await setup('wall-time', workerSays(1, 'too slow', { delayMs: 20_000 }));
    const started = Date.now();
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run(
        'evaluate-optimize',
        task({ budget: { maxWallTime: '2s' }, escalationTimeout: '1s' }),
      );
      return until(stack, workflowId, (s) => s === 'budget_exhausted');
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(record).toMatchObject({
      state: 'budget_exhausted',
      stopReason: 'time',
      escalation: { kind: 'budget', timedOut: true },
    });
    expect(record.attempts[0]).toMatchObject({ candidate: null, passed: false, stopped: { reason: 'time' } });
    // the scripted server saw the client hang up during its delay: the HTTP request was aborted
    for (let i = 0; i < 50 && model.requests[0]?.status !== 499; i++) await new Promise((r) => setTimeout(r, 100));
    expect(model.requests[0]).toMatchObject({ role: 'worker', status: 499 });
  });
});

describe('accounting and model errors', () => {
  test('a 529 then a success charges the tokens of the answer the provider gave, once, after honouring retry-after', async () => {
    const overloaded: ModelRule = {
      name: 'overloaded',
      match: { role: 'worker' },
      times: 1,
      error: { status: 529, headers: { 'retry-after': '2' } },
    } as ModelRule;
    const { model, stack } = await setup('retry-529', overloaded, workerSays(1, 'a crash'), judgeSays(1, true));
    const record = await stack.run(async () =>
      stack.client.wait((await stack.client.run('evaluate-optimize', task({}))).workflowId),
    );
    expect(record.state).toBe('completed');
    const tries = workerRequests(model);
    expect(tries.map((r) => r.status)).toEqual([529, 200]);
    const [first, retry] = mustTake(tries, 2, 'two tries');
    expect(Date.parse(retry.at) - Date.parse(first.at)).toBeGreaterThanOrEqual(1900);
    expect(record.usage.worker).toMatchObject({ inputTokens: 100, outputTokens: 20 });
    expect(record.attempts[0]?.usage).toMatchObject({ inputTokens: 150, outputTokens: 30 });
    expect(record.usage.total.costUsd).toBeGreaterThan(0);
  });

  test('a call that times out after the provider answered is still charged (usage from its last heartbeat), and the retry is charged too', async () => {
    let calls = 0;
    const { model, stack } = await setup.with(
      'timeout-after-answer',
      [workerSays(1, 'first answer', { times: 2 } as Partial<ModelRule>), judgeSays(1, true)],
      {
        wrap: (acts) => ({
          ...acts,
          async generateCandidate(input) {
            const started = Date.now();
            const result = await acts.generateCandidate(input);
            if (++calls > 1) return result;
            // The answer is in, but this try never returns it. The worker stays alive to the
            // activity's first liveness heartbeat (the one a second every activity sends, see
            // activities/index.ts), which carries the usage the call kept, and is then lost: no
            // more heartbeats, so the server times the activity out.
            const ctx = Context.current();
            await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
            heartbeatAlive(ctx);
            await ctx.cancelled.catch(() => undefined);
            throw new Error('lost after answering');
          },
        }),
      },
    );
    const s = stack;
    const record = await s.run(async () =>
      s.client.wait((await s.client.run('evaluate-optimize', task({}))).workflowId),
    );
    expect(record.state).toBe('completed');
    expect(workerRequests(model).map((r) => r.status)).toEqual([200, 200]);
    expect(record.usage.worker).toMatchObject({ inputTokens: 200, outputTokens: 40 });
  }, 90_000);

  test('a 401 escalates at once with a reason a person can act on, and ends blocked at the deadline', async () => {
    const denied: ModelRule = { name: 'denied', match: { role: 'worker' }, error: { status: 401 } } as ModelRule;
    const { model, stack } = await setup('auth', denied);
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', task({ escalationTimeout: '2s' }));
      const waiting = await stack.client.wait(workflowId);
      expect(waiting).toMatchObject({
        state: 'awaiting_human',
        stopReason: 'model_error',
        escalation: { kind: 'error' },
      });
      expect(waiting.escalation?.reason).toMatch(/HTTP 401 .*check ANTHROPIC_API_KEY/);
      return until(stack, workflowId, (s) => s !== 'awaiting_human');
    });
    expect(record).toMatchObject({ state: 'blocked', stopReason: 'model_error' });
    expect(workerRequests(model)).toHaveLength(1);
  });

  test('retryable errors stop after five tries and escalate with the last error', async () => {
    const down: ModelRule = {
      name: 'down',
      match: { role: 'worker' },
      error: { status: 500, headers: { 'retry-after': '0' } },
    } as ModelRule;
    const { model, stack } = await setup('exhausted', down);
    const record = await stack.run(async () =>
      stack.client.wait((await stack.client.run('evaluate-optimize', task({}))).workflowId),
    );
    expect(record).toMatchObject({ state: 'awaiting_human', stopReason: 'model_error' });
    expect(record.escalation?.reason).toMatch(/failed 5 times; last error: model call failed with HTTP 500/);
    expect(workerRequests(model)).toHaveLength(5);
    await stack.client.temporal.workflow.getHandle(record.workflowId).terminate('test done');
  });
});
