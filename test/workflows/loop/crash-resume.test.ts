import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../../client/loopwright-client';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { startWorkerProcess as startWorker, stopWorkerProcesses } from '../../helpers/cli';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { judgeSays, script } from '../../helpers/scripts';
import { workerProcessEnv } from '../../helpers/temporal';
import { operatorTrust } from '../../helpers/trust';

/**
 * A worker process killed (SIGKILL) in the middle of an agent session, and another started:
 * the session resumes from history; no completed model turn or tool call runs again.
 */
let model: ModelServer | undefined;

afterAll(async () => {
  await stopWorkerProcesses();
  await model?.close();
});

test('kill -9 the worker mid-session: another worker resumes it without repeating a completed turn or tool call', async () => {
  const workspace = mkdtempSync(path.join(tmpdir(), 'lw-crash-'));
  writeFileSync(path.join(workspace, 'a.txt'), 'alpha\n');
  model = await startModelServer({
    script: script(
      turnCalls(1, [['read_file', { path: 'a.txt' }]]),
      turnCalls(2, [['write_file', { path: 'b.txt', content: 'beta\n' }]]),
      // The first time turn 3 is asked, the worker is killed while the model "thinks".
      turnCalls(3, [['list_files', { path: '.' }]], { times: 1, delayMs: 60_000 } as never),
      turnCalls(3, [['list_files', { path: '.' }]]),
      turnAnswers(4, 'done: a.txt read, b.txt written'),
      judgeSays(1, true),
    ),
    port: 0,
  });
  // L3 needs an operator's grant on the worker.
  const env = { ...workerProcessEnv('crash', model.url), ...operatorTrust(['evaluate-optimize']).env };

  const client = await LoopwrightClient.connect({ env });
  try {
    const first = await startWorker(env);
    const { workflowId } = await client.run('evaluate-optimize', {
      task: 'Read a, write b.',
      rubric: ['done'],
      tools: ['read_file', 'write_file', 'list_files'],
      workspace,
      autonomy: 'L3',
    });
    while (!model.requests.some((r) => r.turn === 3)) await new Promise((r) => setTimeout(r, 50));
    await first.stop('SIGKILL');

    await startWorker(env);
    const record = await client.wait(workflowId);

    expect(record).toMatchObject({ state: 'completed', output: 'done: a.txt read, b.txt written' });
    const turns = model.requests.filter((r) => r.role === 'worker').map((r) => r.turn);
    expect(turns.filter((t) => t === 1)).toHaveLength(1);
    expect(turns.filter((t) => t === 2)).toHaveLength(1);
    expect(turns.filter((t) => t === 3)).toHaveLength(2); // the one in flight when the worker died is asked again
    expect(turns.filter((t) => t === 4)).toHaveLength(1);
    const history = await client.temporal.workflow.getHandle(workflowId).fetchHistory();
    const toolRuns = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
    );
    expect(toolRuns).toHaveLength(3);
    const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
    expect(started.every((e) => (e.activityTaskStartedEventAttributes!.attempt ?? 1) === 1)).toBe(true);
    expect(record.attempts[0]?.toolCalls!.map((c) => c.name)).toEqual(['read_file', 'write_file', 'list_files']);
  } finally {
    await client.close();
  }
}, 120_000);
