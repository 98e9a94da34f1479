import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { LoopwrightClient } from '../../../client/loopwright-client';
import demoScript from '../../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../../model-server/script';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { startWorkerProcess as startWorker, stopWorkerProcesses } from '../../helpers/cli';
import { workerProcessEnv } from '../../helpers/temporal';

/**
 * A worker process killed (SIGKILL) in the middle of the effect: after the target branch moved,
 * before the user's checkout is updated and the activity reports back. The worker runs no hook,
 * so a `git` first on the worker's PATH holds it there: it runs the real git and, after the
 * first `update-ref` of refs/heads/main, touches a marker and sleeps. The next worker retries
 * the effect, finds the commit by its key, finishes the checkout, and the fix lands exactly once.
 */
let model: ModelServer | undefined;

afterAll(async () => {
  await stopWorkerProcesses();
  await model?.close();
});

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

test('kill -9 the worker after the ref moved, before the checkout is updated: the commit lands exactly once and the checkout is finished', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-effect-crash-'));
  const repo = createSampleRepo(path.join(dir, 'repo'));
  const marker = path.join(dir, 'ref-moved');
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    [
      '#!/bin/sh',
      `'${realGit}' "$@"`,
      'rc=$?',
      `case " $* " in *" update-ref "*" refs/heads/main "*) [ -e '${marker}' ] || { touch '${marker}'; sleep 30; } ;; esac`,
      'exit $rc',
      '',
    ].join('\n'),
  );
  chmodSync(path.join(bin, 'git'), 0o755);
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  const env = { ...workerProcessEnv('effect-crash', model.url), PATH: `${bin}:${process.env.PATH}` };
  const before = git(repo, 'rev-parse', 'main');

  const client = await LoopwrightClient.connect({ env });
  try {
    const first = await startWorker(env);
    const { workflowId } = await client.run('fix-test', {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    });
    expect((await client.wait(workflowId)).escalation?.kind).toBe('approval');

    await client.decide(workflowId, { kind: 'approve', by: 'ada' });
    while (!existsSync(marker)) await new Promise((r) => setTimeout(r, 50));
    // In the middle: main moved to the effect's commit, the checkout still holds the bug.
    expect(git(repo, 'rev-parse', 'main')).not.toBe(before);
    expect(readFileSync(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a - b;');
    await first.stop('SIGKILL');

    await startWorker(env);
    const record = await client.wait(workflowId);
    expect(record.state).toBe('completed');
    expect(record.effects).toHaveLength(1);
    expect(record.effects[0]?.alreadyApplied).toBe(true);
    const commits = git(repo, 'log', 'main', '--format=%H', '--grep=Loopwright-Effect').split('\n');
    expect(commits).toEqual([record.effects[0]?.commit]);
    expect(git(repo, 'rev-parse', 'main')).toBe(record.effects[0]?.commit);
    // The retry finished what the killed worker started: the checkout is clean and holds the fix.
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(readFileSync(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a + b;');
    execFileSync('node', ['--test'], { cwd: repo, stdio: 'ignore' });
  } finally {
    await client.close();
  }
}, 120_000);
