import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../../activities';
import { LoopwrightClient } from '../../../client/loopwright-client';
import type { RunRecord } from '../../../common/run-record';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { startWorkerProcess as startWorker, stopWorkerProcesses, type Background } from '../../helpers/cli';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { scriptedStacks, workerProcessEnv } from '../../helpers/temporal';
import { operatorTrust } from '../../helpers/trust';

/**
 * Activities survive lost workers: a worker process killed (SIGKILL) while a tool call, a model
 * call or a check runs, again and again, and another started each time: every one is retried
 * and the run ends as an undisturbed run would. A check that fails on its last try makes the run
 * wait for a human with the reason, never end `failed`. Two workers share a task queue: one is
 * killed, and every run finishes on the other.
 */
let model: ModelServer | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(async () => {
  await stopWorkerProcesses();
  await model?.close();
  model = undefined;
});

/** A script that counts its runs in the file named by $1 and hangs (until killed) on its first three. */
const SLOW =
  'n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"; if [ "$n" -le 3 ]; then sleep 300; fi; echo "$1 done after $n tries"\n';
const count = (file: string) => (existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : 0);

async function until(what: string, check: () => boolean, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

test('kill -9 the worker three times during a tool call, a model call and a check: each is retried and the run completes as undisturbed', async () => {
  const workspace = mkdtempSync(path.join(tmpdir(), 'lw-lost-'));
  writeFileSync(path.join(workspace, 'slow.sh'), SLOW);
  model = await startModelServer({
    script: script(
      turnCalls(1, [['run_command', { command: 'sh slow.sh tool.n' }]]),
      // The answer of turn 2 is held three times: the worker is killed while it waits.
      turnAnswers(2, 'all done', { times: 3, delayMs: 300_000 } as never),
      turnAnswers(2, 'all done'),
    ),
    port: 0,
  });
  const env = { ...workerProcessEnv('lost', model.url), ...operatorTrust(['evaluate-optimize']).env };
  const client = await LoopwrightClient.connect({ env });
  let worker: Background = await startWorker(env);
  const replace = async () => {
    await worker.stop('SIGKILL');
    worker = await startWorker(env);
  };
  try {
    const { workflowId } = await client.run('evaluate-optimize', {
      task: 'Run the slow script, then say you are done.',
      tools: ['run_command'],
      allowCommands: ['sh slow.sh'],
      workspace,
      autonomy: 'L3',
      maxAttempts: 1,
      checks: [{ kind: 'command', name: 'slow-check', command: 'sh slow.sh check.n' }],
    });
    for (let kill = 1; kill <= 3; kill++) {
      await until(`tool try ${kill}`, () => count(path.join(workspace, 'tool.n')) === kill);
      await replace();
    }
    for (let kill = 1; kill <= 3; kill++) {
      await until(
        `model try ${kill}`,
        () => model!.requests.filter((r) => r.role === 'worker' && r.turn === 2).length === kill,
      );
      await replace();
    }
    for (let kill = 1; kill <= 3; kill++) {
      await until(`check try ${kill}`, () => count(path.join(workspace, 'check.n')) === kill);
      await replace();
    }
    const record = await client.wait(workflowId);
    expect({ state: record.state, stopReason: record.stopReason, error: record.error }).toEqual({
      state: 'completed',
      stopReason: 'passed',
      error: record.error,
    });
    expect(record.output).toBe('all done');
    // Each ran once more after its three kills, and no more; turn 1 was never asked again.
    expect([count(path.join(workspace, 'tool.n')), count(path.join(workspace, 'check.n'))]).toEqual([4, 4]);
    const turns = model.requests.filter((r) => r.role === 'worker').map((r) => r.turn);
    expect([turns.filter((t) => t === 1).length, turns.filter((t) => t === 2).length]).toEqual([1, 4]);
    expect(record.attempts[0]?.toolCalls).toHaveLength(1);
    expect(record.attempts[0]?.verdicts).toEqual([expect.objectContaining({ check: 'slow-check', passed: true })]);
    expect(record.attempts[0]?.verdicts[0]?.evidence ?? record.attempts[0]?.verdicts[0]?.reason).toContain(
      'check.n done after 4 tries',
    );
  } finally {
    await client.close();
  }
}, 600_000);

describe('an activity that fails on its last try', () => {
  const setup = scriptedStacks();

  test('a check that keeps failing makes the run wait for a human with the reason (activity_error), and a retry decision runs a new attempt', async () => {
    let calls = 0;
    const wrap = (a: Activities): Activities => ({
      ...a,
      runCheck: async (input) => {
        calls += 1;
        if (calls === 1)
          throw ApplicationFailure.create({
            type: 'CheckCrashed',
            nonRetryable: true,
            message: 'the check crashed its process',
          });
        return a.runCheck(input);
      },
    });
    const { stack } = await setup.with('activity-error', [workerSays(1, 'first'), workerSays(2, 'second')], { wrap });
    const s = stack;
    const workspace = mkdtempSync(path.join(tmpdir(), 'lw-check-error-'));
    await s.run(async () => {
      const { workflowId } = await s.client.run('evaluate-optimize', {
        task: 'Say something.',
        checks: [{ kind: 'command', name: 'true', command: 'true' }],
        workspace,
        maxAttempts: 3,
      });
      let record: RunRecord;
      do record = await s.client.status(workflowId);
      while (
        record.state !== 'awaiting_human' &&
        !['completed', 'failed', 'blocked'].includes(record.state) &&
        (await sleep(100), true)
      );
      expect(record).toMatchObject({
        state: 'awaiting_human',
        stopReason: 'activity_error',
        escalation: { kind: 'error' },
      });
      expect(record.escalation!.reason).toMatch(/runCheck failed in attempt 1: the check crashed its process/);
      expect(record.attempts[0]).toMatchObject({ passed: false });
      await s.client.decide(workflowId, {
        kind: 'retry',
        by: 'ops',
        guidance: 'the check runner was fixed',
        attempts: 1,
      });
      const done = await s.client.wait(workflowId);
      expect(done).toMatchObject({ state: 'completed', output: 'second' });
      expect(done.attempts).toHaveLength(2);
    });
  });
});

test('two workers on one task queue: one is killed mid-run, and every run finishes on the other', async () => {
  model = await startModelServer({
    script: script(
      workerSays(1, 'an answer', { times: undefined, delayMs: 1500 } as never),
      judgeSays(1, true, [], '', { times: undefined } as never),
    ),
    port: 0,
  });
  const env = workerProcessEnv('two-workers', model.url);
  const client = await LoopwrightClient.connect({ env });
  try {
    const doomed = await startWorker(env);
    await startWorker(env);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await client.run('evaluate-optimize', { task: `Answer ${i}.`, rubric: ['answers'] })).workflowId);
    // Once the model has been asked for some of them, one worker dies with calls in flight.
    await until('model calls in flight', () => model!.requests.length >= 4);
    await doomed.stop('SIGKILL');
    const records = await Promise.all(ids.map((id) => client.wait(id)));
    expect(records.map((r) => r.state)).toEqual(ids.map(() => 'completed'));
  } finally {
    await client.close();
  }
}, 300_000);
