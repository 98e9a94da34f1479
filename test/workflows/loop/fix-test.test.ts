import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import demoScript from '../../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../../model-server/script';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { testStack, type TestStack } from '../../helpers/temporal';
import { operatorTrust } from '../../helpers/trust';
import { must, mustTake } from '../../../common/must';

/**
 * The fix-test loop (L2) on a real git repository with a real failing test, with the demo's
 * scripted session: a first candidate that deletes the failing test is rejected by the change
 * policy; the second fixes the bug; approval lands it as exactly one commit.
 */
let model: ModelServer | undefined;
let stack: TestStack | undefined;

afterEach(async () => {
  await stack?.close();
  await model?.close();
  stack = model = undefined;
});

const sample = () => createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-fix-')), 'repo'));
const input = (repo: string) => ({
  repo,
  testCommand: 'node --test',
  failingTest: SAMPLE_FAILING_TEST,
  allowedPaths: ['src/', 'test/'],
});
const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo }).toString();
const effectCommits = (repo: string) =>
  git(repo, 'log', 'main', '--format=%H', '--grep=Loopwright-Effect').trim().split('\n').filter(Boolean);

test('a cheating candidate is rejected, the real fix passes, and approving twice commits it exactly once', async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  stack = await testStack('fix-test', model.url);
  const s = stack;
  const repo = sample();
  const record = await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', input(repo));
    const waiting = await s.client.wait(workflowId);
    expect(waiting).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'approval' } });
    expect(effectCommits(repo)).toEqual([]);
    const both = await Promise.allSettled([
      s.client.decide(workflowId, { kind: 'approve', by: 'ada' }),
      s.client.decide(workflowId, { kind: 'approve', by: 'bob' }),
    ]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (;;) {
      const r = await s.client.status(workflowId);
      if (r.state === 'completed' || r.state === 'blocked') return r;
      await new Promise((res) => setTimeout(res, 200));
    }
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed', override: false });
  const [first, second] = mustTake(record.attempts, 2, 'the run has two attempts');
  expect(first.passed).toBe(false);
  // Deleting the failing test made `node --test` green; the gate runs it as base wrote it.
  expect(first.verdicts.find((v) => v.check === 'tests')).toMatchObject({
    passed: false,
    failedItems: ['fail to pass', 'regression test'],
  });
  const policy = first.verdicts.find((v) => v.check === 'change policy')!;
  expect(policy).toMatchObject({ passed: false, failedItems: ['tests append-only'] });
  expect(first.verdicts.find((v) => v.check === 'code review')).toMatchObject({ kind: 'judge', passed: false });
  expect(second.passed).toBe(true);
  expect(record.effects).toHaveLength(1);
  const effect = record.effects[0];
  expect(effect).toMatchObject({
    name: 'commit',
    target: 'main',
    alreadyApplied: false,
    key: `${record.workflowId}/commit/1`,
  });
  expect(effectCommits(repo)).toEqual([effect?.commit]);
  expect(git(repo, 'log', '-1', '--format=%B', 'main')).toContain(`Loopwright-Effect: ${effect?.key}`);
  expect(readFileSync(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a + b;');
  expect(git(repo, 'status', '--porcelain').trim()).toBe('');
  execFileSync('node', ['--test'], { cwd: repo, stdio: 'ignore' });
});

test('an effect activity retried after it committed finds its commit and does not commit again', async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  let calls = 0;
  stack = await testStack('effect-retry', model.url, {}, (acts) => ({
    ...acts,
    async applyEffect(args) {
      const result = await acts.applyEffect(args);
      if (++calls === 1) throw new Error('worker lost right after committing');
      return result;
    },
  }));
  const s = stack;
  const repo = sample();
  const record = await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', input(repo));
    await s.client.wait(workflowId);
    await s.client.decide(workflowId, { kind: 'approve', by: 'ada' });
    for (;;) {
      const r = await s.client.status(workflowId);
      if (r.state === 'completed' || r.state === 'blocked') return r;
      await new Promise((res) => setTimeout(res, 200));
    }
  });
  expect(calls).toBe(2);
  expect(record.state).toBe('completed');
  expect(record.effects[0]?.alreadyApplied).toBe(true);
  expect(effectCommits(repo)).toEqual([record.effects[0]?.commit]);
});

test('candidates that skip the failing test or edit outside the allowed paths are rejected with the right reason', async () => {
  const skipped =
    "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add, multiply } = require('../src/math');\n\ntest('multiply multiplies two numbers', () => {\n  assert.strictEqual(multiply(3, 4), 12);\n});\n\ntest.skip('add adds two numbers', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n";
  const tools = (attempt: number, turn: number, calls: Array<[string, Record<string, unknown>]>) => ({
    name: `a${attempt}t${turn}`,
    match: { role: 'worker', attempt, turn },
    reply: { content: calls.map(([name, input]) => ({ type: 'tool_use', name, input })), stop_reason: 'tool_use' },
  });
  const answer = (attempt: number, turn: number) => ({
    name: `a${attempt}t${turn}`,
    match: { role: 'worker', attempt, turn },
    reply: { content: [{ type: 'text', text: 'done' }] },
  });
  model = await startModelServer({
    script: parseModelScript(
      {
        rules: [
          tools(1, 1, [['write_file', { path: 'test/math.test.js', content: skipped }]]),
          answer(1, 2),
          tools(2, 1, [
            ['edit_file', { path: 'src/math.js', old_text: 'return a - b;', new_text: 'return a + b;' }],
            [
              'write_file',
              {
                path: 'test/math.test.js',
                content:
                  skipped.replace('test.skip(', 'test(') +
                  "\ntest('add adds negatives', () => {\n  assert.strictEqual(add(-1, -1), -2);\n});\n",
              },
            ],
            ['write_file', { path: 'package.json', content: '{"name":"sample-math","scripts":{"test":"echo ok"}}\n' }],
          ]),
          answer(2, 2),
          {
            name: 'review passes',
            match: { role: 'checker' },
            reply: {
              content: [
                {
                  type: 'tool_use',
                  name: 'submit_verdict',
                  input: { passed: true, reason: 'ok', failed_items: [], required_correction: '' },
                },
              ],
            },
          },
        ],
      },
      'cheats',
    ),
    port: 0,
  });
  stack = await testStack('fix-test-cheats', model.url);
  const s = stack;
  const repo = sample();
  const record = await s.run(async () =>
    s.client.wait((await s.client.run('fix-test', { ...input(repo), maxAttempts: 2 })).workflowId),
  );
  expect(record).toMatchObject({ state: 'awaiting_human', stopReason: 'attempts' });
  const verdict = (n: number, check: string) =>
    must(record.attempts[n], `attempt ${n + 1} ran`).verdicts.find((v) => v.check === check)!;
  expect(verdict(0, 'tests').failedItems).toEqual(['fail to pass', 'regression test']);
  expect(verdict(0, 'change policy').failedItems).toEqual(['tests append-only']);
  expect(verdict(0, 'change policy').reason).toMatch(/test\/math\.test\.js:9/);
  // The second attempt fixes the bug but rewrites package.json's test script: the gate runs the loop's own command.
  expect(verdict(1, 'tests').passed).toBe(true);
  expect(verdict(1, 'change policy').failedItems).toEqual(['allowed paths', 'tests append-only']);
  expect(verdict(1, 'change policy').reason).toContain('package.json');
  expect(verdict(1, 'change policy').reason).toContain('package.json: scripts.test changed (runner configuration)');
  expect(effectCommits(repo)).toEqual([]);
  expect(git(repo, 'log', '--oneline', 'main').trim().split('\n')).toHaveLength(1);
  await s.client.temporal.workflow.getHandle(record.workflowId).terminate('test done');
});

test('at L3 the verified fix is committed at once, and the run waits in list --needs-audit for a person', async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  stack = await testStack('fix-test-l3', model.url, operatorTrust(['fix-test']).env);
  const s = stack;
  const repo = sample();
  await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', { ...input(repo), autonomy: 'L3' });
    const done = await s.client.wait(workflowId);
    expect(done).toMatchObject({ state: 'completed', audit: { needed: true }, decision: null });
    expect(done.audit?.reason).toMatch(/L3/);
    expect(done.effects[0]).toMatchObject({ approvedBy: null, target: 'main' });
    expect(effectCommits(repo)).toEqual([done.effects[0]?.commit]);
    for (let i = 0; i < 50; i++) {
      if ((await s.client.list({ needsAudit: true, limit: 500 })).some((r) => r.workflowId === workflowId)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await s.client.list({ needsAudit: true, limit: 500 })).map((r) => r.workflowId)).toContain(workflowId);
    await s.client.decide(workflowId, { kind: 'audit', by: 'ivy', verdict: 'ok' });
    await s.client.temporal.workflow.getHandle(workflowId).result();
  });
});
