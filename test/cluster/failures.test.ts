import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { LoopwrightClient } from '../../client/loopwright-client';
import type { RunRecord } from '../../common/run-record';
import { parseModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { killService, restartService, restartServices } from '../../server/cluster/control';
import { isRunning, readState } from '../../server/cluster/processes';
import { startWorkerProcess as startWorker, stopWorkerProcesses } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * The cluster's own failures (npm run test:cluster): a Temporal service killed with SIGKILL and
 * started again, every Temporal service killed at once and started again, or PostgreSQL restarted
 * cleanly or killed with SIGKILL (crash recovery at its next start), while one run waits on a slow model call and a fix-test
 * run waits for its approval. Each run ends as it would have undisturbed: the slow run completes
 * with its answer, the approval sent after the failure is applied (twice sent, once taken), and
 * the fix lands as exactly one commit.
 */
const models: ModelServer[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(async () => {
  await stopWorkerProcesses();
  for (const m of models.splice(0)) await m.close();
});

function clusterDir(): string {
  const dir = process.env.LOOPWRIGHT_CLUSTER_DIR;
  if (!dir) throw new Error('LOOPWRIGHT_CLUSTER_DIR is not set: run these tests with npm run test:cluster');
  return dir;
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 180_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo }).toString();
const effectCommits = (repo: string) =>
  git(repo, 'log', 'main', '--format=%H', '--grep=Loopwright-Effect').trim().split('\n').filter(Boolean);

/** Runs the two runs, calls `disrupt` while the slow model call is in flight, and checks that both end as undisturbed. */
async function survives(tag: string, disrupt: () => Promise<void>): Promise<void> {
  const id = `${tag}-${randomBytes(3).toString('hex')}`;
  const slowId = `${id}/slow`;
  const slowModel = await startModelServer({
    script: script(
      workerSays(1, 'slow answer', { times: undefined, delayMs: 4000 } as never),
      judgeSays(1, true, [], '', { times: undefined } as never),
    ),
    port: 0,
  });
  const fixModel = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  models.push(slowModel, fixModel);
  const slowEnv = workerProcessEnv(`${tag}-slow`, slowModel.url);
  const fixEnv = workerProcessEnv(`${tag}-fix`, fixModel.url);
  await Promise.all([startWorker(slowEnv), startWorker(fixEnv)]);
  const slowClient = await LoopwrightClient.connect({ env: slowEnv });
  let fixClient = await LoopwrightClient.connect({ env: fixEnv });
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-cluster-fix-')), 'repo'));
  try {
    const { workflowId: fixId } = await fixClient.run(
      'fix-test',
      { repo, testCommand: 'node --test', failingTest: SAMPLE_FAILING_TEST, allowedPaths: ['src/', 'test/'] },
      { id: `${id}/fix` },
    );
    await until('the fix to wait for approval', async () => (await fixClient.status(fixId)).state === 'awaiting_human');
    await slowClient.run('evaluate-optimize', { task: 'Answer slowly.', rubric: ['answers'] }, { id: slowId });
    await until('the slow model call', () => slowModel.requests.some((r) => r.workflowId === slowId));

    await disrupt();

    expect(await slowClient.wait(slowId)).toMatchObject({ state: 'completed', output: 'slow answer' });
    await fixClient.close();
    fixClient = await LoopwrightClient.connect({ env: fixEnv });
    // The fix's worker polls again once the restarted service has it back (its pollers back off
    // after the errors of the outage): its run answers a query again before the decisions go.
    await until('the fix worker to answer again', async () => {
      try {
        return (await fixClient.status(fixId)).state === 'awaiting_human';
      } catch {
        return false;
      }
    });
    const both = await Promise.allSettled([
      fixClient.decide(fixId, { kind: 'approve', by: 'ada' }),
      fixClient.decide(fixId, { kind: 'approve', by: 'bob' }),
    ]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    let record: RunRecord;
    await until('the fix to land', async () =>
      ['completed', 'blocked', 'failed'].includes((record = await fixClient.status(fixId)).state),
    );
    expect(record!).toMatchObject({
      state: 'completed',
      stopReason: 'passed',
      decision: expect.objectContaining({ kind: 'approve' }),
    });
    expect(record!.effects).toHaveLength(1);
    expect(effectCommits(repo)).toEqual([record!.effects[0]?.commit]);
  } finally {
    await slowClient.close();
    await fixClient.close();
  }
}

/** Kills one process of the cluster with `signal`, waits 2 s, and starts it again as it was. */
const bounce =
  (name: string, signal: NodeJS.Signals = 'SIGKILL') =>
  async () => {
    await killService(clusterDir(), name, signal);
    await sleep(2000);
    await restartService(clusterDir(), name);
  };

/** Every Temporal service process of the cluster (not PostgreSQL, the UI or Loopwright's workers). */
const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'frontend-2', 'internal-worker'];

/** Kills every Temporal service process at once with SIGKILL, waits 2 s, and starts them all again together. */
async function killAllTemporal(): Promise<void> {
  const names = readState(clusterDir())!.processes.map((p) => p.name);
  expect(names).toEqual(expect.arrayContaining(TEMPORAL_SERVICES));
  await Promise.all(TEMPORAL_SERVICES.map((name) => killService(clusterDir(), name)));
  expect(
    readState(clusterDir())!
      .processes.filter((p) => TEMPORAL_SERVICES.includes(p.name))
      .filter(isRunning),
  ).toEqual([]);
  await sleep(2000);
  await restartServices(clusterDir(), TEMPORAL_SERVICES);
}

/** After a failure, every Temporal service is up: none died of the outage unnoticed. */
function temporalServicesRunning(): string[] {
  return readState(clusterDir())!
    .processes.filter((p) => TEMPORAL_SERVICES.includes(p.name) && isRunning(p))
    .map((p) => p.name)
    .sort();
}

test(
  'kill -9 the history service mid-run and start it again: the slow run completes, the approval after it lands one commit',
  () => survives('history-kill', bounce('history')),
  600_000,
);

test(
  'kill -9 the matching service mid-run and start it again: both runs end as undisturbed',
  () => survives('matching-kill', bounce('matching')),
  600_000,
);

test(
  'kill -9 the second frontend (the clients use the first): both runs end as undisturbed',
  () => survives('frontend-kill', bounce('frontend-2')),
  600_000,
);

test(
  'restart PostgreSQL mid-run (fast shutdown, start on the same data): both runs end as undisturbed',
  () => survives('postgres-restart', bounce('postgres', 'SIGINT')),
  600_000,
);

test('kill -9 PostgreSQL mid-run (no clean shutdown: crash recovery at start) and start it again: both runs end as undisturbed', async () => {
  await survives('postgres-kill', bounce('postgres', 'SIGKILL'));
  const pgLog = readState(clusterDir())!.processes.find((p) => p.name === 'postgres')!.logFile;
  expect(readFileSync(pgLog, 'utf8')).toContain('automatic recovery in progress');
  // The Temporal services rode out the outage: none exited for want of its database.
  expect(temporalServicesRunning()).toEqual([...TEMPORAL_SERVICES].sort());
}, 600_000);

test('kill -9 every Temporal service process at once mid-run and start them all again: both runs end as undisturbed', async () => {
  await survives('all-temporal-kill', killAllTemporal);
  expect(temporalServicesRunning()).toEqual([...TEMPORAL_SERVICES].sort());
}, 600_000);
