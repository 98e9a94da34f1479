import { JUDGE_SYSTEM_PROMPT } from '../../../common/judge';
import { DecisionRefusedError } from '../../../common/errors';
import type { ModelServer } from '../../../model-server/server';
import { runPresentation } from '../../../common/run-presentation';
import { LoopAutonomy, LoopCostUsd, LoopState } from '../../../common/search-attributes';
import { loopWorkflow, loopWorkflowV2 } from '../../../workflows/loop/loop-workflow';
import { workflowSource } from '../../../workers/workflow-bundle';
import { scriptedStacks } from '../../helpers/temporal';
import { judgeSays, workerSays } from '../../helpers/scripts';

const RUBRIC = ['exactly three lines', 'mentions a crash'];
const input = (extra: Record<string, unknown> = {}) => ({
  task: 'Write a haiku about crashes.',
  rubric: RUBRIC,
  ...extra,
});

const setup = scriptedStacks();

const roles = (m: ModelServer) => m.requests.map((r) => `${r.role}#${r.attempt}`);

describe('loopWorkflow on a real dev server', () => {
  test('completes on the first try when the judge passes the first candidate', async () => {
    const { model, stack } = await setup('pass', workerSays(1, 'line one\na crash\nline three'), judgeSays(1, true));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input());
      return stack.client.wait(workflowId);
    });
    expect(record.state).toBe('completed');
    expect(record.ok).toBe(true);
    expect(record.stopReason).toBe('passed');
    expect(record.override).toBe(false);
    expect(record.output).toBe('line one\na crash\nline three');
    expect(record.attempts).toHaveLength(1);
    expect(record.attempts[0]?.verdicts[0]?.rubricHash).toBe(record.rubricHash);
    expect(record.usage.worker.inputTokens).toBe(100);
    expect(record.usage.checker.inputTokens).toBe(50);
    expect(record.usage.total.outputTokens).toBe(30);
    expect(roles(model)).toEqual(['worker#1', 'checker#1']);
  });

  test('feeds the failed candidate, the reason and the required correction into attempt 2', async () => {
    const { model, stack } = await setup(
      'feedback',
      workerSays(1, 'FIRST CANDIDATE'),
      judgeSays(1, false, ['exactly three lines'], 'Use exactly three lines.'),
      workerSays(2, 'fixed\na crash\nthree', {
        match: { role: 'worker', attempt: 2, lastUser: 'Use exactly three lines.' },
      }),
      judgeSays(2, true),
    );
    const record = await stack.run(async () =>
      stack.client.wait((await stack.client.run('evaluate-optimize', input())).workflowId),
    );
    expect(record.state).toBe('completed');
    expect(record.attempts.map((a) => a.passed)).toEqual([false, true]);
    expect(record.attempts[0]?.reasons[0]).toContain('exactly three lines');
    const second = model.requests.find((r) => r.role === 'worker' && r.attempt === 2)!;
    expect(second.lastUser).toContain('FIRST CANDIDATE');
    expect(second.lastUser).toContain('required correction: Use exactly three lines.');
    expect(second.lastUser).toContain('exactly three lines');
  });

  test('gives the judge a fresh context with only the rubric, the task and the candidate', async () => {
    const { model, stack } = await setup(
      'fresh-judge',
      workerSays(1, 'FIRST CANDIDATE'),
      judgeSays(1, false, ['mentions a crash'], 'Mention the crash.'),
      workerSays(2, 'SECOND CANDIDATE'),
      judgeSays(2, true),
    );
    await stack.run(async () => stack.client.wait((await stack.client.run('evaluate-optimize', input())).workflowId));
    const judge2 = model.requests.find((r) => r.role === 'checker' && r.attempt === 2)!;
    const body = judge2.body as { messages: unknown[]; system: unknown };
    expect(judge2.system).toBe(JUDGE_SYSTEM_PROMPT);
    expect(body.messages).toHaveLength(1);
    expect(judge2.lastUser).toContain('<candidate>\nSECOND CANDIDATE\n</candidate>');
    expect(judge2.lastUser).toContain('Write a haiku about crashes.');
    for (const item of RUBRIC) expect(judge2.lastUser).toContain(item);
    expect(judge2.lastUser).not.toContain('FIRST CANDIDATE');
    expect(judge2.lastUser).not.toContain('Mention the crash.');
    expect(judge2.system).not.toContain('careful worker');
  });

  test('escalates after maxAttempts without a third worker call, and approve is recorded as an override', async () => {
    const { model, stack } = await setup(
      'approve',
      workerSays(1, 'one'),
      judgeSays(1, false, ['mentions a crash']),
      workerSays(2, 'two'),
      judgeSays(2, false, ['mentions a crash']),
    );
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input({ maxAttempts: 2 }));
      const waiting = await stack.client.wait(workflowId);
      expect(waiting.state).toBe('awaiting_human');
      expect(waiting.stopReason).toBe('attempts');
      expect(roles(model)).toEqual(['worker#1', 'checker#1', 'worker#2', 'checker#2']);
      const applied = await stack.client.decide(workflowId, { kind: 'approve', by: 'ada', note: 'good enough' });
      expect(applied.status).toBe('applied');
      return stack.client.wait(workflowId);
    });
    expect(record.state).toBe('completed');
    expect(record.stopReason).toBe('approved');
    expect(record.override).toBe(true);
    expect(record.attempts.every((a) => !a.passed)).toBe(true);
    expect(record.output).toBe('two');
    expect(record.decision).toMatchObject({ kind: 'approve', by: 'ada', status: 'applied' });
  });

  test('ends rejected when a human rejects the escalated run', async () => {
    const { stack } = await setup('reject', workerSays(1, 'one'), judgeSays(1, false, ['mentions a crash']));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input({ maxAttempts: 1 }));
      await stack.client.wait(workflowId);
      await stack.client.decide(workflowId, { kind: 'reject', by: 'bob', reason: 'off topic' });
      return stack.client.wait(workflowId);
    });
    expect(record.state).toBe('rejected');
    expect(record.stopReason).toBe('rejected');
    expect(record.ok).toBe(false);
    expect(record.decision).toMatchObject({ kind: 'reject', by: 'bob', reason: 'off topic' });
  });

  test('retry turns the guidance into feedback and grants more attempts', async () => {
    const { model, stack } = await setup(
      'retry',
      workerSays(1, 'one'),
      judgeSays(1, false, ['mentions a crash']),
      workerSays(2, 'a crash\nin\nthree', {
        match: { role: 'worker', attempt: 2, lastUser: 'Talk about the power cut.' },
      }),
      judgeSays(2, true),
    );
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input({ maxAttempts: 1 }));
      await stack.client.wait(workflowId);
      await stack.client.decide(workflowId, {
        kind: 'retry',
        by: 'cy',
        guidance: 'Talk about the power cut.',
        attempts: 1,
      });
      return stack.client.wait(workflowId);
    });
    expect(record.state).toBe('completed');
    expect(record.stopReason).toBe('passed');
    expect(record.budget).toMatchObject({ maxAttempts: 2, used: { attempts: 2 } });
    expect(record.budget.extensions).toEqual([
      expect.objectContaining({ by: 'cy', attempts: 1, guidance: 'Talk about the power cut.' }),
    ]);
    expect(model.requests.find((r) => r.role === 'worker' && r.attempt === 2)!.lastUser).toContain('Guidance from cy');
  });

  test('ends budget_exhausted when nobody decides by the deadline', async () => {
    const { stack } = await setup('deadline', workerSays(1, 'one'), judgeSays(1, false, ['mentions a crash']));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run(
        'evaluate-optimize',
        input({ maxAttempts: 1, escalationTimeout: '2s' }),
      );
      const waiting = await stack.client.wait(workflowId);
      expect(waiting.state).toBe('awaiting_human');
      for (;;) {
        const r = await stack.client.status(workflowId);
        if (r.state !== 'awaiting_human') return r;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    });
    expect(record.state).toBe('budget_exhausted');
    expect(record.stopReason).toBe('attempts');
    expect(record.escalation?.timedOut).toBe(true);
    expect(record.decision).toBeNull();
  });

  test('refuses a decision while the run is not waiting, and the run goes on unharmed', async () => {
    const { stack } = await setup('refuse', workerSays(1, 'slow answer', { delayMs: 1500 }), judgeSays(1, true));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input());
      await expect(stack.client.decide(workflowId, { kind: 'approve', by: 'eve' })).rejects.toThrow(
        /not waiting for a decision/,
      );
      await expect(stack.client.decide(workflowId, { kind: 'approve', by: 'eve' })).rejects.toThrow(
        DecisionRefusedError,
      );
      return stack.client.wait(workflowId);
    });
    expect(record.state).toBe('completed');
    expect(record.stopReason).toBe('passed');
    // The update's validator refused it: nothing of it reached the run's history or record.
    expect(record.decisions).toHaveLength(0);
  });

  test('cancel ends the run canceled with its record', async () => {
    const { stack } = await setup('cancel', workerSays(1, 'one'), judgeSays(1, false, ['mentions a crash']));
    const record = await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', input({ maxAttempts: 1 }));
      await stack.client.wait(workflowId);
      return stack.client.cancel(workflowId);
    });
    expect(record.state).toBe('canceled');
    expect(record.stopReason).toBe('canceled');
    expect(record.attempts).toHaveLength(1);
  });

  test.each([
    { workflow: loopWorkflow, keepsOne: true },
    { workflow: loopWorkflowV2, keepsOne: false },
  ])(
    'each search-attribute upsert of $workflow.name sends only what changed, and a forged start value is corrected',
    async ({ workflow, keepsOne }) => {
      const { stack } = await setup(
        `upserts-${workflow.name}`,
        workerSays(1, 'one'),
        judgeSays(1, false, ['mentions a crash']),
        workerSays(2, 'two\na crash\nthree'),
        judgeSays(2, true),
      );
      const { history, attributes } = await stack.run(async () => {
        // Started as a client that lies in its search attributes: the spec says L1, the start says L3.
        const plan = stack.client.plan('evaluate-optimize', input(), { kind: 'client' });
        const shown = runPresentation(plan);
        const handle = await stack.client.temporal.workflow.start(workflow, {
          taskQueue: stack.taskQueue,
          workflowId: `upserts-${workflow.name}-${Date.now()}`,
          args: [plan],
          ...shown,
          typedSearchAttributes: shown.typedSearchAttributes.map((p) =>
            p.key.name === LoopAutonomy.name ? { key: LoopAutonomy, value: 'L3' } : p,
          ),
        });
        expect((await stack.client.wait(handle.workflowId)).state).toBe('completed');
        const described = await handle.describe();
        return { history: await handle.fetchHistory(), attributes: described.typedSearchAttributes };
      });
      expect(attributes.get(LoopAutonomy)).toBe('L1');
      expect(attributes.get(LoopState)).toBe('completed');
      expect(attributes.get(LoopCostUsd)).toBeGreaterThan(0);

      const value = (p: { data?: Uint8Array | null }) => Buffer.from(p.data ?? []).toString();
      const events = history.events ?? [];
      const current = new Map(
        Object.entries(events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {}).map(
          ([k, p]) => [k, value(p)],
        ),
      );
      const upserts = events.flatMap((e) => {
        const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
        return fields && !('TemporalChangeVersion' in fields) ? [Object.entries(fields)] : [];
      });
      expect(upserts.length).toBeGreaterThanOrEqual(4);
      const sent: string[][] = [];
      for (const pairs of upserts) {
        const changed = pairs.filter(([k, p]) => current.get(k) !== value(p)).map(([k]) => k);
        // Only changed keys; loopWorkflow keeps one key when nothing changed (every state change is
        // one command there), loopWorkflowV2 sends no such upsert.
        if (keepsOne && changed.length === 0) expect(pairs).toHaveLength(1);
        else expect(changed).toHaveLength(pairs.length);
        for (const [k, p] of pairs) current.set(k, value(p));
        sent.push(pairs.map(([k]) => k).sort());
      }
      // The first upsert corrects the forged autonomy; none resends the run's name.
      expect(sent[0]).toContain('LoopAutonomy');
      expect(sent.flat()).not.toContain('LoopName');
      // Only loopWorkflow asks Temporal about its changes (a patch marker and its upsert).
      const patchUpserts = events.filter(
        (e) =>
          'TemporalChangeVersion' in
          (e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
      );
      expect(patchUpserts.length > 0).toBe(keepsOne);
      // A loop that keeps the default model timeouts does not write them into each call's input.
      const callInputs = events
        .flatMap((e) => e.activityTaskScheduledEventAttributes?.input?.payloads ?? [])
        .map(value);
      expect(callInputs).toHaveLength(4);
      expect(callInputs.filter((i) => i.includes('"timeouts"'))).toEqual([]);
      // Every workflow task names the worker's build by its bundle's short id, not the SDK's 87 characters.
      const source = workflowSource(process.env, Boolean(process.env.LOOPWRIGHT_KEYS));
      const builds = events.flatMap((e) => {
        const task = e.workflowTaskStartedEventAttributes ?? e.workflowTaskCompletedEventAttributes;
        return task ? [task.workerVersion?.buildId] : [];
      });
      expect(builds.length).toBeGreaterThanOrEqual(8);
      expect(new Set(builds)).toEqual(new Set(['buildId' in source ? source.buildId : 'no prebuilt bundle']));
      expect(builds[0]).toMatch(/^loopwright\+[0-9a-f]{12}$/);
    },
  );
});
