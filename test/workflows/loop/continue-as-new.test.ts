import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../../activities';
import { createModelClient } from '../../../activities/providers';
import { planRun } from '../../../loops/plan-run';
import { readPrices } from '../../../common/pricing';
import type { RunRecord } from '../../../common/run-record';
import {
  LoopAttempt,
  LoopAudit,
  LoopAutonomy,
  LoopCostUsd,
  LoopItemKey,
  LoopName,
  LoopState,
  LoopTokens,
} from '../../../common/search-attributes';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { WORKER_TUNING } from '../../../workers/create-worker';
import { installRuntime } from '../../../workers/runtime';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { judgeSays, script } from '../../helpers/scripts';

/**
 * A dev server of the test's own that suggests continue-as-new after 40 history events, so a
 * 14-turn session must hand over to fresh runs in the middle: it goes on where it stopped,
 * with no turn asked twice and the whole record carried over.
 */
let env: TestWorkflowEnvironment;
let model: ModelServer;

beforeAll(async () => {
  installRuntime();
  env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: process.env.LOOPWRIGHT_TEMPORAL_CLI! },
      searchAttributes: [
        LoopName,
        LoopState,
        LoopAttempt,
        LoopAutonomy,
        LoopItemKey,
        LoopCostUsd,
        LoopTokens,
        LoopAudit,
      ],
      extraArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40', '--headless'],
    },
  });
}, 120_000);

afterAll(async () => {
  await model?.close();
  await env?.teardown();
});

test('a long session continues as new between turns and finishes with every turn asked once', async () => {
  const workspace = mkdtempSync(path.join(tmpdir(), 'lw-can-'));
  writeFileSync(path.join(workspace, 'f.txt'), 'content\n');
  const turns = 14;
  model = await startModelServer({
    script: script(
      ...Array.from({ length: turns - 1 }, (_, i) => turnCalls(i + 1, [['read_file', { path: 'f.txt' }]])),
      turnAnswers(turns, 'read it 13 times'),
      judgeSays(1, true),
    ),
    port: 0,
  });
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: 'can',
    workflowBundle: { codePath: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE! },
    activities: createActivities({
      model: createModelClient({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'test' }),
    }),
    ...WORKER_TUNING,
  });
  const plan = planRun(
    'evaluate-optimize',
    { task: 'Read f.txt many times.', rubric: ['r'], tools: ['read_file'], workspace, maxTurns: 20 },
    { models: { worker: 'claude-sonnet-5-5', checker: 'claude-haiku-5-5' }, prices: readPrices({}) },
    { kind: 'client' },
  );
  const record = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start('loopWorkflowV2', {
      taskQueue: 'can',
      workflowId: 'long-session',
      args: [plan],
    });
    return (await handle.result()) as RunRecord;
  });
  expect(record).toMatchObject({ state: 'completed', output: 'read it 13 times' });
  expect(record.attempts).toHaveLength(1);
  expect(record.attempts[0]?.turns).toBe(turns);
  expect(record.attempts[0]?.toolCalls).toHaveLength(turns - 1);
  const asked = model.requests.filter((r) => r.role === 'worker').map((r) => r.turn);
  expect(asked).toEqual(Array.from({ length: turns }, (_, i) => i + 1));
  expect(record.usage.worker.inputTokens).toBe(200 * (turns - 1) + 300);
  const runs: string[] = [];
  for await (const wf of env.client.workflow.list({ query: `WorkflowId = 'long-session'` })) runs.push(wf.runId);
  expect(runs.length).toBeGreaterThan(1);
}, 120_000);
