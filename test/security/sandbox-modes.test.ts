import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { turnAnswers, turnCalls } from '../helpers/agent-scripts';
import { runCli, startWorkerProcess, stopWorkerProcesses, type Background } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { workerProcessEnv } from '../helpers/temporal';
import { operatorTrust } from '../helpers/trust';

/**
 * Workers without the sandbox, as real `loopwright worker` processes: one that opted out
 * (LOOPWRIGHT_SANDBOX=off) runs commands and records `sandbox: none` everywhere; one whose
 * bubblewrap does not work refuses every run of a loop that runs commands with one line that
 * says how to install it and how to opt out, and still serves loops that run none.
 */
let dir: string;
let model: ModelServer | undefined;
let client: LoopwrightClient | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-sandbox-modes-'));
});
afterEach(async () => {
  await client?.close();
  await stopWorkerProcesses();
  await model?.close();
  client = model = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function start(
  name: string,
  extra: Record<string, string>,
  rules: Parameters<typeof script>,
): Promise<{ worker: Background; env: Record<string, string | undefined> }> {
  model = await startModelServer({ script: script(...rules), port: 0 });
  const env = { ...workerProcessEnv(name, model.url), ...extra };
  const worker = await startWorkerProcess(env);
  client = await LoopwrightClient.connect({ env });
  return { worker, env };
}

test('LOOPWRIGHT_SANDBOX=off: the worker warns at start, commands run, and the record and trace say sandbox none', async () => {
  const ws = path.join(dir, 'ws');
  mkdirSync(ws);
  const { worker, env } = await start(
    'sandbox-off',
    { LOOPWRIGHT_SANDBOX: 'off', ...operatorTrust(['evaluate-optimize']).env },
    [
      turnCalls(1, [
        [
          'run_command',
          { command: `node -e "require('fs').writeFileSync('answer.txt', String(40 + 2)); console.log(40 + 2)"` },
        ],
      ]),
      turnAnswers(2, '42'),
    ],
  );
  expect(worker.output()).toContain('WARNING: LOOPWRIGHT_SANDBOX=off: agent commands and checks run UNSANDBOXED');
  const { workflowId } = await client!.run('evaluate-optimize', {
    task: 'Compute.',
    workspace: ws,
    tools: ['run_command'],
    allowCommands: ['node'],
    autonomy: 'L3',
    checks: [{ kind: 'command', name: 'answer', command: 'test "$(cat answer.txt)" = 42' }],
  });
  const done = await client!.wait(workflowId);
  expect(done).toMatchObject({ state: 'completed', sandbox: 'none' });
  expect(done.attempts[0]?.toolCalls![0]).toMatchObject({ name: 'run_command', isError: false, sandbox: 'none' });
  expect(done.attempts[0]?.toolCalls![0]?.preview).toContain('42');
  expect(done.attempts[0]?.verdicts[0]).toMatchObject({ check: 'answer', sandbox: 'none' });
  expect((await runCli(['status', workflowId], env)).stdout).toContain(
    'sandbox    none (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)',
  );
  const trace = await runCli(['trace', workflowId], env);
  expect(trace.stdout).toContain('sandbox: none (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)');
  expect(trace.stdout).toMatch(/tool run_command .*\[sandbox none\]/);
  const json = JSON.parse((await runCli(['trace', workflowId, '--json'], env)).stdout) as {
    sandbox: string;
    attempts: Array<{ checks: Array<{ sandbox: string }> }>;
  };
  expect(json.sandbox).toBe('none');
  expect(json.attempts[0]?.checks[0]?.sandbox).toBe('none');
}, 90_000);

test('a worker whose sandbox does not work refuses command-running loops with one line, and still runs the others', async () => {
  const { worker } = await start('sandbox-missing', { LOOPWRIGHT_BWRAP: path.join(dir, 'no-bwrap-here') }, [
    workerSays(1, 'a haiku'),
    judgeSays(1, true),
  ]);
  expect(worker.output()).toMatch(
    /WARNING: no sandbox \(LOOPWRIGHT_BWRAP=.*no-bwrap-here is not an executable file\): runs of loops that run commands will be refused; install bubblewrap \(apt-get install bubblewrap\) or set LOOPWRIGHT_SANDBOX=off/,
  );

  const repo = createSampleRepo(path.join(dir, 'repo'));
  const fix = await client!.wait(
    (
      await client!.run('fix-test', {
        repo,
        testCommand: 'node --test',
        failingTest: SAMPLE_FAILING_TEST,
        allowedPaths: ['src/', 'test/'],
      })
    ).workflowId,
  );
  const check = await client!.wait(
    (await client!.run('evaluate-optimize', { task: 'Answer.', checks: [{ kind: 'command', command: 'true' }] }))
      .workflowId,
  );
  for (const refused of [fix, check]) {
    expect(refused).toMatchObject({ state: 'blocked', stopReason: 'setup_error', attempts: [] });
    expect(refused.error!.split('\n')).toHaveLength(1);
    expect(refused.error).toContain('the sandbox for agent commands does not work on this worker');
    expect(refused.error).toContain('apt-get install bubblewrap');
    expect(refused.error).toContain('LOOPWRIGHT_SANDBOX=off');
  }
  expect(model!.requests).toHaveLength(0);

  const judged = await client!.wait(
    (await client!.run('evaluate-optimize', { task: 'Write a haiku.', rubric: ['three lines'] })).workflowId,
  );
  expect(judged).toMatchObject({ state: 'completed', stopReason: 'passed' });
  expect(judged.sandbox).toBeUndefined();
}, 90_000);
