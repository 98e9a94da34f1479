import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../model-server/script';
import type { RunRecord } from '../../common/run-record';
import { runCli } from '../helpers/cli';
import { scriptedStacks, testAddress, type TestStack } from '../helpers/temporal';
import { must } from '../../common/must';

/**
 * `loopwright review` as a user runs it (the built CLI, no terminal) against the test dev server,
 * on a fix-test run that the demo's scripted session brings to its approval.
 */
const setup = scriptedStacks();
const demo = () => parseModelScript(demoScript, 'demo');

const cliEnv = (s: TestStack) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  LOOPWRIGHT_HOME: mkdtempSync(path.join(tmpdir(), 'lw-review-home-')),
  TEMPORAL_ADDRESS: testAddress(),
  LOOPWRIGHT_TASK_QUEUE: s.taskQueue,
});
const oneErrorLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
};
async function until(s: TestStack, id: string, done: (r: RunRecord) => boolean): Promise<RunRecord> {
  for (;;) {
    const r = await s.client.status(id);
    if (done(r)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
}

test('review of a fix-test run waiting for approval prints the diff of src/math.js, the checks and the cost; --json parses; an unknown id exits 2', async () => {
  const { stack: s } = await setup.with('review', demo());
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-review-')), 'repo'));
  const env = cliEnv(s);
  await s.run(async () => {
    const { workflowId: id } = await s.client.run('fix-test', {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    });
    const waiting = await s.client.wait(id);
    expect(waiting).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'approval' } });

    const text = await runCli(['review', id], env);
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 0, stderr: '' });
    const out = text.stdout;
    expect(out.split('\n')[0]).toBe(id);
    expect(out).not.toContain('\x1b'); // no terminal: no colour
    expect(out).toMatch(/ {2}state {6}awaiting_human/);
    expect(out).toMatch(/ {2}waiting {4}approval until \d{4}-/);
    expect(out).toMatch(
      new RegExp(`decide with: loopwright approve\\|reject ${id} --by NAME --wait [0-9a-f]{12}$`, 'm'),
    );
    expect(out).toMatch(/ {2}attempts {3}2\/3; this is attempt 2: passed/);
    expect(out).toMatch(/ {2}usage {6}\d+ tokens \(\d+ in \/ \d+ out\), \$\d+\.\d{4}/);
    expect(out).toContain(`  branch     ${waiting.workspace!.branch}`);
    expect(out).toMatch(/^checks of attempt 2$/m);
    expect(out).toMatch(/^ {2}pass {2}change policy \(diff\)/m);
    for (const v of must(waiting.attempts[1], 'the run has two attempts').verdicts)
      expect(out).toContain(`  pass  ${v.check} (${v.kind})`);
    expect(out).toMatch(/^diff [0-9a-f]{12}\.\.[0-9a-f]{12} \(what the approval lands\)$/m);
    expect(out).toMatch(/src\/math\.js\s+\|\s+2 \+-/);
    expect(out).toContain('diff --git a/src/math.js b/src/math.js');
    expect(out).toContain('\n-  return a - b;\n+  return a + b;\n');

    const json = await runCli(['review', id, '--json'], env);
    expect(json.code).toBe(0);
    const review = JSON.parse(json.stdout);
    expect(review).toMatchObject({
      version: 1,
      workflowId: id,
      loop: 'fix-test',
      state: 'awaiting_human',
      attempt: { n: 2, passed: true },
      waiting: { kind: 'approval' },
      diff: { status: 'ok' },
    });
    expect(review.diff.patch).toContain('+  return a + b;');
    expect(review.usage.costUsd).toBe(waiting.usage.total.costUsd);

    // Attempt 1 deleted the failing test; its review shows that and the policy's failure.
    const first = await runCli(['review', id, '--attempt', '1', '--no-diff'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^ {2}FAIL {2}change policy \(diff\)/m);
    expect(first.stdout).toContain('diff: not shown (--no-diff)');

    const unknown = await runCli(['review', 'fix-test/no-such-run'], env);
    expect(unknown.code).toBe(2);
    oneErrorLine(unknown.stderr);
    expect(unknown.stderr).toContain('no run with id fix-test/no-such-run');
    const badAttempt = await runCli(['review', id, '--attempt', '9'], env);
    expect(badAttempt.code).toBe(2);
    oneErrorLine(badAttempt.stderr);

    // --wait: the decision is sent only while the run waits on what the review showed.
    const token: string = review.waiting.wait;
    expect(out).toContain(`--wait ${token}`);
    const malformed = await runCli(['approve', id, '--by', 'ada', '--wait', 'latest'], env);
    expect(malformed.code).toBe(2);
    oneErrorLine(malformed.stderr);
    expect(malformed.stderr).toContain('--wait must be the 12 hex digits `loopwright review` prints, not "latest"');
    const other = token === '000000000000' ? '111111111111' : '000000000000';
    const stale = await runCli(['approve', id, '--by', 'ada', '--wait', other], env);
    expect(stale.code).toBe(2);
    oneErrorLine(stale.stderr);
    expect(stale.stderr).toContain(
      `decision refused by run ${id}: it no longer waits on what --wait ${other} names (it now waits on ${token})`,
    );
    expect(stale.stderr).toContain('(nothing was sent)');
    expect((await s.client.status(id)).decisions).toEqual([]);
    const approved = await runCli(['approve', id, '--by', 'ada', '--wait', token], env);
    expect({ code: approved.code, stderr: approved.stderr }).toEqual({ code: 0, stderr: '' });
    expect(approved.stdout).toContain('approve by ada: applied');
    expect(await s.client.wait(id)).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });
});

test('review of a run that never attempted anything exits 2 with one line that says what to do', async () => {
  const { stack: s } = await setup.with('review-none', demo());
  await s.run(async () => {
    const { workflowId: id } = await s.client.run('fix-test', {
      repo: '/no/such/folder',
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/'],
    });
    const record = await until(s, id, (r) => r.state === 'blocked');
    expect(record.attempts).toEqual([]);
    const r = await runCli(['review', id], cliEnv(s));
    expect(r.code).toBe(2);
    oneErrorLine(r.stderr);
    expect(r.stderr).toContain(`error: run ${id} has no attempt to review (state blocked, setup_error:`);
    expect(r.stderr).toContain(`see \`loopwright status ${id}\``);
    expect(r.stdout).toBe('');
  });
});
