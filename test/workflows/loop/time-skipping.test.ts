import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../../activities';
import { createModelClient } from '../../../activities/providers';
import { planRun } from '../../../loops/plan-run';
import { readPrices } from '../../../common/pricing';
import type { RunRecord } from '../../../common/run-record';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import type { ModelRule } from '../../../model-server/script';
import { findTestServer } from '../../../server/temporal-binary';
import { SEARCH_ATTRIBUTES } from '../../../common/search-attributes';
import { WORKER_TUNING } from '../../../workers/create-worker';
import { installRuntime } from '../../../workers/runtime';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { uniqueQueue } from '../../helpers/temporal';

/**
 * Deadlines measured in hours, on Temporal's time-skipping test server (installed by the
 * project's locator): the server jumps over timers while the workflow waits, so a 24 h
 * escalation and a 1 h wall-time budget end in seconds of real time.
 */
let env: TestWorkflowEnvironment;
let model: ModelServer | undefined;

beforeAll(async () => {
  installRuntime();
  const path = await findTestServer({ log: () => undefined });
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } });
  const types = { Keyword: 2, Int: 3, Double: 4 } as const;
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((a) => [a.name, types[a.type]])),
  });
}, 120_000);

afterAll(async () => {
  await env?.teardown();
});

afterEach(async () => {
  await model?.close();
  model = undefined;
});

async function runToEnd(
  name: string,
  input: Record<string, unknown>,
  rules: Parameters<typeof script>,
): Promise<{ record: RunRecord; realMs: number }> {
  model = await startModelServer({ script: script(...rules), port: 0 });
  const taskQueue = uniqueQueue(name);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE! },
    activities: createActivities({
      model: createModelClient({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'test' }),
    }),
    ...WORKER_TUNING,
  });
  const plan = planRun(
    'evaluate-optimize',
    input,
    { models: { worker: 'claude-sonnet-5-5', checker: 'claude-haiku-5-5' }, prices: readPrices({}) },
    { kind: 'client' },
  );
  const started = Date.now();
  const record = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start('loopWorkflowV2', {
      taskQueue,
      workflowId: `${name}-${taskQueue}`,
      args: [plan],
    });
    return (await handle.result()) as RunRecord;
  });
  return { record, realMs: Date.now() - started };
}

describe('on the time-skipping test server', () => {
  test('nobody decides within a 24 h escalation deadline: the run ends budget_exhausted, in seconds', async () => {
    const { record, realMs } = await runToEnd('deadline', { task: 'T.', rubric: ['r'], maxAttempts: 1 }, [
      workerSays(1, 'x'),
      judgeSays(1, false, ['r']),
    ]);
    expect(record).toMatchObject({
      state: 'budget_exhausted',
      stopReason: 'attempts',
      escalation: { kind: 'budget', timedOut: true },
    });
    expect(Date.parse(record.endedAt!) - Date.parse(record.escalation!.since)).toBeGreaterThanOrEqual(24 * 3600 * 1000);
    expect(realMs).toBeLessThan(30_000);
  });

  test('a 1 h wall-time budget runs out while a model call backs off for 2 h: the attempt stops on time and the run ends', async () => {
    // The test server skips time only while the workflow waits on timers, not while an activity
    // runs, so the hour passes in the retry back-off that the provider's retry-after asked for.
    // (Cancelling an in-flight model call is shown on the dev server, in budgets.test.ts.)
    const overloaded = {
      name: 'overloaded',
      match: { role: 'worker' },
      error: { status: 529, headers: { 'retry-after': '7200' } },
    } as ModelRule;
    const { record, realMs } = await runToEnd(
      'wall',
      { task: 'T.', rubric: ['r'], budget: { maxWallTime: '1h' }, escalationTimeout: '24h' },
      [overloaded],
    );
    expect(realMs).toBeLessThan(30_000);
    expect(record).toMatchObject({
      state: 'budget_exhausted',
      stopReason: 'time',
      escalation: { kind: 'budget', stopReason: 'time', timedOut: true },
    });
    expect(record.attempts[0]).toMatchObject({ candidate: null, stopped: { reason: 'time' } });
    expect(record.budget.used.wallTimeMs).toBeGreaterThanOrEqual(3600 * 1000);
    expect(record.budget.used.wallTimeMs).toBeLessThan(2 * 3600 * 1000);
    expect(model!.requests.map((r) => r.status)).toEqual([529]);
  });
});
