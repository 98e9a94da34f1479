import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pauseFiles } from '../../../activities/test-pause';
import { LoopwrightClient } from '../../../client/loopwright-client';
import type { RunRecord } from '../../../common/run-record';
import demoScript from '../../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../../model-server/script';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { startWorkerProcess, stopWorkerProcesses } from '../../helpers/cli';
import { workerProcessEnv } from '../../helpers/temporal';
import { must } from '../../../common/must';

/**
 * The commit effect killed at each of its steps: a real `loopwright worker` process holds each
 * run's effect at the step the test chose for it (LOOPWRIGHT_TEST_PAUSE_DIR, see
 * activities/test-pause.ts), the test kills it with SIGKILL once every run is held, and a fresh
 * worker takes over. Every step, for a target that is checked out and one that is not, several
 * runs each: the run ends as an undisturbed run would (completed, the effect applied), with
 * exactly one commit carrying the effect key on the target, holding the verified tree, and a
 * clean checkout at that commit when it is checked out.
 */
const STEPS = ['start', 'commit-written', 'ref-moved', 'done'] as const;
type Step = (typeof STEPS)[number];
const KINDS = ['checked-out', 'not-checked-out'] as const;
type Kind = (typeof KINDS)[number];
/** Runs per step of each target kind: 4 steps x (3 + 2) = 20 killed-worker runs. */
const REPEATS: Record<Kind, number> = { 'checked-out': 3, 'not-checked-out': 2 };

/** The demo's fix, in one attempt: the fix and a regression test, a summary, a passing review. */
const rule = (name: string) => demoScript.rules.find((r) => r.name.startsWith(name))!;
const oneAttempt = {
  rules: [
    { ...rule('attempt 2, turn 2'), match: { role: 'worker', attempt: 1, turn: 1 }, delayMs: 50 },
    { ...rule('attempt 2, turn 4'), match: { role: 'worker', attempt: 1, turn: 2 }, delayMs: 50 },
    { ...rule('code review of attempt 2'), match: { role: 'checker', attempt: 1 }, delayMs: 50 },
  ],
};

let model: ModelServer | undefined;
afterAll(async () => {
  await stopWorkerProcesses();
  await model?.close();
});

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const withKey = (repo: string, target: string, key: string) =>
  git(repo, 'log', target, '--format=%H', '--fixed-strings', `--grep=Loopwright-Effect: ${key}`)
    .split('\n')
    .filter(Boolean);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Case {
  step: Step;
  kind: Kind;
  repo: string;
  target: string;
  /** The target's tip before the run. */
  before: string;
  workflowId: string;
}

async function until(what: string, ok: () => boolean, timeoutMs = 150_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * Starts a fix-test run as `loopwright run fix-test` would, with one difference: nothing runs in
 * the sandbox. Of its checks only the change policy (git only) runs, and the agent has no
 * run_command (the script never calls it): sandboxed test runs, the sandbox probe and the judge
 * cost seconds of CPU per run and have nothing to do with the effect; with 20 runs at once they
 * would be most of the test's time (effect-crash.test.ts and fix-test.test.ts run the whole loop).
 */
async function startRun(client: LoopwrightClient, c: Omit<Case, 'workflowId'>, workflowId: string): Promise<void> {
  const input = {
    repo: c.repo,
    testCommand: 'node --test',
    failingTest: SAMPLE_FAILING_TEST,
    allowedPaths: ['src/', 'test/'],
    ...(c.kind === 'not-checked-out' ? { targetBranch: c.target } : {}),
  };
  const plan = client.plan('fix-test', input, { kind: 'client' });
  const agent = { ...plan.spec.agent, tools: plan.spec.agent.tools.filter((tool) => tool !== 'run_command') };
  const spec = { ...plan.spec, agent, checks: plan.spec.checks.filter((check) => check.kind === 'diff') };
  expect(spec.checks).toHaveLength(1);
  await client.temporal.workflow.start('loopWorkflow', {
    taskQueue: client.config.taskQueue,
    workflowId,
    args: [{ ...plan, spec }],
  });
}

test('kill -9 the worker at every step of the commit effect: each run completes with exactly one commit and a clean checkout', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-effect-steps-'));
  const pauses = mkdtempSync(path.join(dir, 'pauses-'));
  model = await startModelServer({ script: parseModelScript(oneAttempt, 'one attempt'), port: 0 });
  const env = workerProcessEnv('effect-steps', model.url);
  const started = Date.now();
  const held = await startWorkerProcess({ ...env, LOOPWRIGHT_TEST_PAUSE_DIR: pauses });
  const client = await LoopwrightClient.connect({ env });
  const cases: Case[] = [];
  let records: RunRecord[];
  let atKill: Array<{ tip: string; math: string }>;
  try {
    const stamp = Date.now().toString(36);
    for (const step of STEPS) {
      for (const kind of KINDS) {
        for (let i = 1; i <= REPEATS[kind]; i++) {
          const repo = createSampleRepo(path.join(mkdtempSync(path.join(dir, `${step}-${kind}-`)), 'repo'));
          if (kind === 'not-checked-out') git(repo, 'branch', 'release');
          const target = kind === 'checked-out' ? 'main' : 'release';
          const workflowId = `fix-test/steps-${stamp}-${step}-${kind}-${i}`;
          writeFileSync(pauseFiles(pauses, `${workflowId}/commit/1`).at, step);
          cases.push({ step, kind, repo, target, before: git(repo, 'rev-parse', target), workflowId });
        }
      }
    }
    await Promise.all(
      cases.map(async (c) => {
        await startRun(client, c, c.workflowId);
        expect(await client.wait(c.workflowId)).toMatchObject({
          state: 'awaiting_human',
          escalation: { kind: 'approval' },
        });
        await client.decide(c.workflowId, { kind: 'approve', by: 'ada' });
      }),
    );
    await until('every effect held at its step', () =>
      cases.every((c) => existsSync(pauseFiles(pauses, `${c.workflowId}/commit/1`).held)),
    );
    atKill = cases.map((c) => ({
      tip: git(c.repo, 'rev-parse', c.target),
      math: readFileSync(path.join(c.repo, 'src/math.js'), 'utf8'),
    }));
    await held.stop('SIGKILL');
    // The next worker holds nowhere.
    await startWorkerProcess(env);
    records = await Promise.all(cases.map((c) => client.wait(c.workflowId)));
  } finally {
    await client.close();
  }
  let good = 0;
  cases.forEach((c, i) => {
    const record = must(records[i], 'one record per case');
    const label = `${c.step} / ${c.kind} / ${c.workflowId}`;
    // What the killed worker had done when it died.
    const moved = c.step === 'ref-moved' || c.step === 'done';
    expect({ label, moved: atKill[i]?.tip !== c.before }).toEqual({ label, moved });
    if (c.kind === 'checked-out')
      expect({ label, fixed: atKill[i]?.math.includes('return a + b;') }).toEqual({ label, fixed: c.step === 'done' });
    // What the fresh worker made of it: the run an undisturbed worker would have finished.
    expect({ label, state: record.state, stopReason: record.stopReason, error: record.error ?? null }).toEqual({
      label,
      state: 'completed',
      stopReason: 'passed',
      error: null,
    });
    const key = `${c.workflowId}/commit/1`;
    const tip = git(c.repo, 'rev-parse', c.target);
    expect(record.effects).toEqual([
      expect.objectContaining({ key, target: c.target, commit: tip, alreadyApplied: moved }),
    ]);
    expect(record.effects[0]?.note).toBeUndefined();
    expect({ label, commits: withKey(c.repo, c.target, key) }).toEqual({ label, commits: [tip] });
    expect(git(c.repo, 'rev-parse', `${tip}^`)).toBe(c.before);
    // The attempt's commit is in the run's own repository; the landing brought its tree here.
    expect(git(c.repo, 'rev-parse', `${tip}^{tree}`)).toBe(
      git(
        must(record.workspace ?? undefined, 'the run has a workspace').root,
        'rev-parse',
        `${record.attempts[0]?.commit}^{tree}`,
      ),
    );
    expect({ label, status: git(c.repo, 'status', '--porcelain') }).toEqual({ label, status: '' });
    if (c.kind === 'checked-out') {
      expect(git(c.repo, 'rev-parse', 'HEAD')).toBe(tip);
      expect(readFileSync(path.join(c.repo, 'src/math.js'), 'utf8')).toContain('return a + b;');
    } else {
      expect(git(c.repo, 'rev-parse', 'main')).toBe(c.before);
      expect(readFileSync(path.join(c.repo, 'src/math.js'), 'utf8')).toContain('return a - b;');
    }
    good += 1;
  });
  expect(good).toBe(STEPS.length * (REPEATS['checked-out'] + REPEATS['not-checked-out']));
  process.stderr.write(
    `effect-steps: ${good}/${cases.length} killed-worker runs completed with exactly one commit and a clean checkout in ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
}, 360_000);
