import { LoopwrightClient } from '../../../client/loopwright-client';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { freePort } from '../../../server/free-port';
import { runCli, startWorkerProcess, stopWorkerProcesses } from '../../helpers/cli';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { workerProcessEnv } from '../../helpers/temporal';

/**
 * `loopwright worker --metrics host:port` serves Prometheus metrics: Temporal's runtime metrics
 * and Loopwright's own, emitted by the workflow. Two runs on one worker process: one passes on
 * its second attempt, one escalates and is rejected by a person.
 */
let model: ModelServer | undefined;

afterAll(async () => {
  await stopWorkerProcesses();
  await model?.close();
});

/** The value of the series `name{labels...}` (labels in any order), or undefined. */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

test('the worker serves runtime and loop metrics: runs by state, attempts, tokens, cost, check verdicts, human wait', async () => {
  const RUBRIC = ['mentions a crash'];
  model = await startModelServer({
    script: script(
      workerSays(1, 'first'),
      judgeSays(1, false, ['mentions a crash'], 'Mention a crash.'),
      workerSays(2, 'a crash'),
      judgeSays(2, true),
      workerSays(1, 'off topic', { name: 'worker 1 again' }),
      judgeSays(1, false, ['mentions a crash'], 'Mention a crash.', { name: 'judge 1 again' }),
    ),
    port: 0,
  });
  const env = workerProcessEnv('metrics', model.url);
  const port = await freePort();
  const worker = await startWorkerProcess(env, ['--metrics', `127.0.0.1:${port}`]);
  expect(worker.output()).toContain(`metrics: http://127.0.0.1:${port}/metrics`);

  const client = await LoopwrightClient.connect({ env });
  try {
    const passed = await client.run('evaluate-optimize', {
      task: 'Write about crashes.',
      rubric: RUBRIC,
      maxAttempts: 2,
    });
    expect((await client.wait(passed.workflowId)).state).toBe('completed');

    // The second run fails its only attempt, waits for a person, and is rejected.
    const rejected = await client.run('evaluate-optimize', {
      task: 'Write about crashes.',
      rubric: RUBRIC,
      maxAttempts: 1,
    });
    expect((await client.wait(rejected.workflowId)).state).toBe('awaiting_human');
    await client.decide(rejected.workflowId, { kind: 'reject', by: 'bob', reason: 'no' });
    expect((await client.wait(rejected.workflowId)).state).toBe('rejected');
  } finally {
    await client.close();
  }

  // Workflow metrics reach the exporter with the next workflow task completion; poll briefly.
  let text = '';
  for (let i = 0; i < 50; i++) {
    text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    if (series(text, 'loopwright_runs_total', { state: 'rejected' }) !== undefined) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const loop = { loop: 'evaluate-optimize' };
  expect(
    series(text, 'loopwright_runs_total', { ...loop, state: 'completed', stop_reason: 'passed', autonomy: 'L1' }),
  ).toBe(1);
  expect(series(text, 'loopwright_runs_total', { ...loop, state: 'rejected', stop_reason: 'rejected' })).toBe(1);
  expect(series(text, 'loopwright_run_attempts_sum', loop)).toBe(3);
  expect(series(text, 'loopwright_run_attempts_count', loop)).toBe(2);
  // Check pass rate: one passing verdict of three.
  expect(series(text, 'loopwright_checks_total', { ...loop, check: 'judge', passed: 'true' })).toBe(1);
  expect(series(text, 'loopwright_checks_total', { ...loop, check: 'judge', passed: 'false' })).toBe(2);
  // Scripted replies: worker 100 in + 20 out, judge 50 in + 10 out, per call; three of each.
  expect(series(text, 'loopwright_tokens_total', { ...loop, role: 'worker' })).toBe(3 * 120);
  expect(series(text, 'loopwright_tokens_total', { ...loop, role: 'checker' })).toBe(3 * 60);
  expect(series(text, 'loopwright_cost_usd_count', { ...loop, role: 'worker' })).toBe(3);
  expect(series(text, 'loopwright_cost_usd_sum', { ...loop, role: 'worker' })).toBeGreaterThan(0);
  expect(series(text, 'loopwright_human_wait_seconds_count', { ...loop, kind: 'budget', outcome: 'decided' })).toBe(1);
  expect(
    series(text, 'loopwright_human_wait_seconds_sum', { ...loop, kind: 'budget', outcome: 'decided' }),
  ).toBeGreaterThan(0);
  // Temporal's own runtime metrics are on the same endpoint.
  expect(text).toMatch(/^temporal_workflow_completed_total\{/m);
  expect(text).toMatch(/^temporal_activity_execution_latency_count\{/m);
});

test('a malformed --metrics address is a one-line error with exit code 2', async () => {
  const r = await runCli(['worker', '--metrics', 'nowhere'], {
    PATH: process.env.PATH,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
  });
  expect(r.code).toBe(2);
  expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/--metrics "nowhere" is not host:port/)]);
});
