import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { autonomyCommand, type AutonomyOptions } from '../../../client/commands/autonomy';
import { LoopwrightClient } from '../../../client/loopwright-client';
import { UsageError } from '../../../common/errors';
import type { Evidence } from '../../../common/promotion';
import demoScript from '../../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../../model-server/script';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { clientEnv, scriptedStacks } from '../../helpers/temporal';
import { operatorTrust } from '../../helpers/trust';
import { mustTake } from '../../../common/must';

/**
 * `loopwright autonomy` against the dev server: real runs on a task queue of the test's own
 * (other tests' runs of the same loops share the server), their records read back through
 * visibility and `result()`, and the evidence counted from them.
 */
const setup = scriptedStacks();

type Report = Evidence & { loop: string; skipped: Record<string, number>; capped: boolean };

/** Runs the command until visibility shows `runs` closed runs (it lags the runs by a moment). */
async function evidence(client: LoopwrightClient, loop: string, opts: AutonomyOptions, runs: number): Promise<Report> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const lines: string[] = [];
    const code = await autonomyCommand(
      client,
      loop,
      { ...opts, json: true },
      { out: (l) => lines.push(l), err: () => undefined },
    );
    expect(code).toBe(0);
    const report = JSON.parse(lines.join('\n')) as Report;
    if (report.runs >= runs || Date.now() > deadline) return report;
    await new Promise((r) => setTimeout(r, 300));
  }
}

test('counts two L1 passes, one human override and one rejection of evaluate-optimize', async () => {
  // The judge's prompt carries the task: each task says how its run should go.
  const judge = (name: string, passed: boolean) =>
    judgeSays(0, passed, passed ? [] : ['mentions a crash'], 'Mention the crash.', {
      name,
      times: undefined,
      match: { role: 'checker', lastUser: passed ? '[pass]' : '[fail]' },
    });
  const { stack } = await setup.with(
    'autonomy-l1',
    script(workerSays(1, 'a candidate', { times: undefined }), judge('judge pass', true), judge('judge fail', false)),
  );
  const s = stack;
  const start = (mark: string) =>
    s.client
      .run('evaluate-optimize', { task: `Write a haiku ${mark}.`, rubric: ['mentions a crash'], maxAttempts: 1 })
      .then((r) => r.workflowId);

  const [pass1, pass2, approved, rejected] = await s.run(async () => {
    const ids = await Promise.all(['[pass]', '[pass]', '[fail]', '[fail]'].map(start));
    const waiting = await Promise.all(ids.map((id) => s.client.wait(id)));
    expect(waiting.map((r) => r.state)).toEqual(['completed', 'completed', 'awaiting_human', 'awaiting_human']);
    const [, , toApprove, toReject] = mustTake(ids, 4, 'four runs were started');
    await s.client.decide(toApprove, { kind: 'approve', by: 'ada', note: 'ok' });
    await s.client.decide(toReject, { kind: 'reject', by: 'bob', reason: 'no crash' });
    return mustTake(await Promise.all(ids.map((id) => s.client.wait(id))), 4, 'four runs were started');
  });
  expect([pass1.state, pass2.state, approved.override, rejected.state]).toEqual([
    'completed',
    'completed',
    true,
    'rejected',
  ]);

  const report = await evidence(s.client, 'evaluate-optimize', { level: 'L1', taskQueue: s.taskQueue, since: '1h' }, 4);
  expect(report).toMatchObject({
    loop: 'evaluate-optimize',
    level: 'L1',
    runs: 4,
    rule: null,
    meets: false,
    verdict: 'no promotion rule declared',
    capped: false,
  });
  expect(report.counts).toEqual({
    approved_unchanged: 0,
    passed: 2,
    audited_ok: 0,
    overridden: 1,
    rejected: 1,
    audited_bad: 0,
    unverified: 0,
    other: 0,
  });

  // The human table: one line per outcome, then the rule and the verdict.
  const table = async (opts: AutonomyOptions) => {
    const lines: string[] = [];
    await autonomyCommand(
      s.client,
      'evaluate-optimize',
      { ...opts, taskQueue: s.taskQueue },
      { out: (l) => lines.push(l), err: () => undefined },
    );
    return lines;
  };
  const l1 = await table({ level: 'L1' });
  expect(l1[0]).toBe('evaluate-optimize at L1: 4 closed runs');
  expect(l1).toEqual(
    expect.arrayContaining([
      '  passed              2',
      '  overridden          1',
      '  rejected            1',
      '  streak              -',
      'rule: none',
    ]),
  );
  expect(l1.at(-1)).toBe('no promotion rule declared');
  // Runs at another level are not listed.
  expect((await table({ level: 'L2' }))[0]).toBe('evaluate-optimize at L2: 0 closed runs');
});

test('an approved fix-test run (L2, the default level of its spec) counts as approved unchanged only when the approval was signed and verified', async () => {
  // The test's client signs every decision with a key the worker's allowed signers trust.
  const { stack } = await setup.with('autonomy-l2', parseModelScript(demoScript, 'demo'), { env: operatorTrust().env });
  const s = stack;
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-autonomy-')), 'repo'));
  const record = await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    });
    expect((await s.client.wait(workflowId)).escalation?.kind).toBe('approval');
    await s.client.decide(workflowId, { kind: 'approve', by: 'ada' });
    for (;;) {
      const r = await s.client.status(workflowId);
      if (r.state !== 'awaiting_human' && r.state !== 'applying' && r.state !== 'running') return r;
      await new Promise((res) => setTimeout(res, 200));
    }
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed', override: false });

  const report = await evidence(s.client, 'fix-test', { taskQueue: s.taskQueue }, 1);
  expect(report).toMatchObject({ level: 'L2', runs: 1 });
  expect(report.counts.approved_unchanged).toBe(1);
  expect(record.decisions).toEqual([expect.objectContaining({ kind: 'approve', verified: true })]);
});

test('an unsigned approval (a worker without allowed signers) counts as unverified, never as approved unchanged', async () => {
  const { stack } = await setup.with('autonomy-unsigned', parseModelScript(demoScript, 'demo'));
  const s = stack;
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-autonomy-')), 'repo'));
  await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    });
    expect((await s.client.wait(workflowId)).escalation?.kind).toBe('approval');
    expect(await s.client.decide(workflowId, { kind: 'approve', by: 'ada' })).toMatchObject({ verified: false });
    await s.client.temporal.workflow.getHandle(workflowId).result();
  });
  const report = await evidence(s.client, 'fix-test', { taskQueue: s.taskQueue }, 1);
  expect(report.counts).toMatchObject({ approved_unchanged: 0, unverified: 1 });
  expect(report.streak).toBe(0);
});

test('an unknown loop or level is a usage error that names the known ones', async () => {
  const client = await LoopwrightClient.connect({ env: clientEnv() });
  const io = { out: () => undefined, err: () => undefined };
  try {
    await expect(autonomyCommand(client, 'nope', {}, io)).rejects.toThrow(
      new UsageError('unknown loop "nope": known loops are evaluate-optimize, fix-test, ci-triage'),
    );
    await expect(autonomyCommand(client, 'fix-test', { level: 'L4' }, io)).rejects.toThrow(
      '--level must be L1, L2 or L3, not "L4"',
    );
    await expect(autonomyCommand(client, 'fix-test', { since: 'a week' }, io)).rejects.toThrow(
      '--since takes a duration like 7d, 12h or 30m, not "a week"',
    );
  } finally {
    await client.close();
  }
});
