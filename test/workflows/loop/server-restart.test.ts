import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../../client/loopwright-client';
import type { RunRecord } from '../../../common/run-record';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { freePort, startDevServer, type DevServer } from '../../../server/dev-server';
import { startWorkerProcess as startWorker, stopWorkerProcesses } from '../../helpers/cli';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { workerProcessEnv } from '../../helpers/temporal';

/**
 * The Temporal dev server killed (SIGKILL) and restarted on the same SQLite file while a run
 * waits on a model call and another waits for a human: the worker process reconnects by itself,
 * the first run completes, and the second takes its approval afterwards. Nothing is lost.
 */
let server: DevServer | undefined;
let model: ModelServer | undefined;
let dir: string;

afterAll(async () => {
  await stopWorkerProcesses();
  await server?.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('kill -9 the dev server mid-run and restart it: a run in a model call completes and a parked run takes its approval', async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-restart-'));
  const dbFile = path.join(dir, 'temporal.db');
  const port = await freePort();
  const start = () => startDevServer({ cli: process.env.LOOPWRIGHT_TEMPORAL_CLI, dbFile, port, headless: true });
  server = await start();
  model = await startModelServer({
    script: script(
      workerSays(1, 'slow answer', {
        name: 'slow',
        match: { role: 'worker', attempt: 1, workflowId: 'restart/slow' },
        delayMs: 4000,
      } as never),
      workerSays(1, 'parked answer', {
        name: 'parked',
        match: { role: 'worker', attempt: 1, workflowId: 'restart/parked' },
      } as never),
      judgeSays(1, true, [], '', {
        name: 'judge slow',
        match: { role: 'checker', attempt: 1, workflowId: 'restart/slow' },
      } as never),
      judgeSays(1, false, ['not good'], 'do better', {
        name: 'judge parked',
        match: { role: 'checker', attempt: 1, workflowId: 'restart/parked' },
      } as never),
    ),
    port: 0,
  });
  const env = { ...workerProcessEnv('restart', model.url), TEMPORAL_ADDRESS: server.address };
  await startWorker(env);
  let client = await LoopwrightClient.connect({ env });
  await client.run('evaluate-optimize', { task: 'Park.', rubric: ['good'], maxAttempts: 1 }, { id: 'restart/parked' });
  for (
    let r: RunRecord = await client.status('restart/parked');
    r.state !== 'awaiting_human';
    r = await client.status('restart/parked')
  )
    await new Promise((res) => setTimeout(res, 100));
  await client.run('evaluate-optimize', { task: 'Answer slowly.', rubric: ['answers'] }, { id: 'restart/slow' });
  while (!model.requests.some((r) => r.workflowId === 'restart/slow')) await new Promise((res) => setTimeout(res, 50));

  // The server dies while the model call is in flight; it comes back on the same file and port.
  process.kill(server.pid, 'SIGKILL');
  await client.close();
  await new Promise((res) => setTimeout(res, 1000));
  server = await start();
  client = await LoopwrightClient.connect({ env });
  try {
    const slow = await client.wait('restart/slow');
    expect(slow).toMatchObject({ state: 'completed', output: 'slow answer' });
    const parked = await client.status('restart/parked');
    expect(parked).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'budget' } });
    await client.decide('restart/parked', { kind: 'approve', by: 'ops', note: 'after the restart' });
    expect(await client.wait('restart/parked')).toMatchObject({
      state: 'completed',
      override: true,
      output: 'parked answer',
    });
  } finally {
    await client.close();
  }
}, 300_000);
