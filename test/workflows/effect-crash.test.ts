import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { LoopwrightClient } from '../../client/loopwright-client';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { startWorkerProcess as startWorker, stopWorkerProcesses } from '../helpers/cli';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * A worker process killed (SIGKILL) while it applies an effect, after the commit is made but
 * before the activity reports back (a slow post-commit hook holds it there): the next worker
 * retries the effect, finds the commit by its key, and the fix lands exactly once.
 */
let model: ModelServer | undefined;

afterAll(async () => {
  await stopWorkerProcesses();
  await model?.close();
});

test('kill -9 the worker in the middle of the effect: the commit lands exactly once', async () => {
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-effect-crash-')), 'repo'));
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  const env = workerProcessEnv('effect-crash', model.url);

  const client = await LoopwrightClient.connect({ env });
  try {
    const first = await startWorker(env);
    const { workflowId } = await client.run('fix-test', { repo, testCommand: 'node --test', failingTest: SAMPLE_FAILING_TEST, allowedPaths: ['src/', 'test/'] });
    expect((await client.wait(workflowId)).escalation?.kind).toBe('approval');

    // From now on a commit in the repository stops for a while after it is made.
    const marker = path.join(repo, '..', 'committed');
    const hook = path.join(repo, '.git', 'hooks', 'post-commit');
    writeFileSync(hook, `#!/bin/sh\ntouch "${marker}"\nsleep 20\n`);
    chmodSync(hook, 0o755);
    await client.decide(workflowId, { kind: 'approve', by: 'ada' });
    while (!existsSync(marker)) await new Promise((r) => setTimeout(r, 50));
    await first.stop('SIGKILL');

    await startWorker(env);
    const record = await client.wait(workflowId);
    expect(record.state).toBe('completed');
    expect(record.effects).toHaveLength(1);
    expect(record.effects[0].alreadyApplied).toBe(true);
    const commits = execFileSync('git', ['log', 'main', '--format=%H', '--grep=Loopwright-Effect'], { cwd: repo }).toString().trim().split('\n');
    expect(commits).toEqual([record.effects[0].commit]);
  } finally {
    await client.close();
  }
}, 120_000);
