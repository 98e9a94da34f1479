import { harnessState, publishHarness, rollbackHarness } from '../../../harness/store';
import { buildTrace } from '../../../trace/build-trace';
import { fetchHistories } from '../../../trace/fetch-histories';
import { improveInput, regressionFromRun, startImprovement, waitImprovement } from '../../../client/improve';
import type { RunRecord } from '../../../common/run-record';
import type { ModelRule } from '../../../model-server/script';
import type { ModelServer } from '../../../model-server/server';
import { deleteSchedule, triggerSchedule } from '../../../client/schedules';
import { runCli } from '../../helpers/cli';
import { judgeSays } from '../../helpers/scripts';
import { scriptedStacks, testAddress, uiSummaries, type TestStack } from '../../helpers/temporal';
import { must } from '../../../common/must';

/**
 * The improvement loop end to end, on the real dev server with scripted sessions: repeated
 * failures → a proposal → an evaluation on the regression set (child runs under the same checks)
 * → a person's review → the next run uses the new harness version; and the ways it says no.
 */
const FIX = 'Always mention a crash.';
const BUILT_IN = 'You are a careful worker. Produce the output the task asks for, and nothing else.';

const stacks = scriptedStacks();

const text = (name: string, match: ModelRule['match'], t: string): ModelRule =>
  ({
    name,
    match,
    reply: { content: [{ type: 'text', text: t }], usage: { input_tokens: 100, output_tokens: 20 } },
  }) as ModelRule;

/** The worker mentions a crash only when its system prompt tells it to; the judge wants a crash. */
const WORLD: ModelRule[] = [
  text('worker hello', { role: 'worker', lastUser: 'Say hello' }, 'hello there'),
  text('worker fixed', { role: 'worker', system: FIX }, 'a crash at night'),
  text('worker', { role: 'worker' }, 'a quiet night'),
  judgeSays(0, true, [], '', {
    times: undefined,
    name: 'judge hello',
    match: { role: 'checker', lastUser: 'hello there' },
  }),
  judgeSays(0, false, ['says hello'], 'Say hello.', {
    times: undefined,
    name: 'judge no hello',
    match: { role: 'checker', lastUser: 'says hello' },
  }),
  judgeSays(0, true, [], '', {
    times: undefined,
    name: 'judge pass',
    match: { role: 'checker', lastUser: 'a crash at night' },
  }),
  judgeSays(0, false, ['mentions a crash'], 'Mention a crash.', {
    times: undefined,
    name: 'judge fail',
    match: { role: 'checker' },
  }),
];

const proposer = (changes: Array<{ path: string; value: string | null }>): ModelRule =>
  ({
    name: 'proposer',
    match: { role: 'proposer' },
    reply: {
      content: [
        {
          type: 'tool_use',
          name: 'submit_proposal',
          input: {
            changes,
            contract: {
              failingRuns: [],
              occurrences: 3,
              rootCause: 'the prompt never asks for a crash',
              expectedImprovement: 'answers mention a crash',
              rollback: 'loopwright harness rollback evaluate-optimize',
            },
          },
        },
      ],
    },
  }) as ModelRule;

const fixPrompt = [{ path: 'systemPrompt', value: `${BUILT_IN}\n${FIX}` }];
const TASK = { task: 'Write about the night.', rubric: ['mentions a crash'], maxAttempts: 1, escalationTimeout: '1s' };

/** Runs `input` to its end (result, not just its terminal state). */
async function finished(s: TestStack, input: Record<string, unknown>): Promise<RunRecord> {
  const { workflowId } = await s.client.run('evaluate-optimize', input);
  return s.client.temporal.workflow.getHandle(workflowId).result();
}

/** A stack whose model plays WORLD, after the test's own rules. */
let model: ModelServer;
async function setup(name: string, ...extra: ModelRule[]): Promise<TestStack> {
  const started = await stacks(name, ...extra, ...WORLD);
  model = started.model;
  return started.stack;
}

const improve = (s: TestStack, opts: Record<string, string> = {}) =>
  startImprovement(
    s.client,
    improveInput(s.client, 'evaluate-optimize', { since: '1h', minOccurrences: '3', repeats: '2', ...opts }, {}),
  );

test('a failure repeated in 3 runs leads to a proposal, an evaluation with a gain, an approval, and the next run on v2; rollback restores v1', async () => {
  const s = await setup('improve', proposer(fixPrompt));
  await s.run(async () => {
    const failed = [await finished(s, TASK), await finished(s, TASK), await finished(s, TASK)] as const;
    expect(failed.map((r) => [r.state, r.harnessVersion])).toEqual([
      ['budget_exhausted', 1],
      ['budget_exhausted', 1],
      ['budget_exhausted', 1],
    ]);
    for (const r of failed.slice(0, 2))
      await regressionFromRun(s.client, { loop: 'evaluate-optimize', runId: r.workflowId, expect: 'pass', by: 'ada' });

    const id = await improve(s);
    const review = await waitImprovement(s.client, id);
    expect(review.state).toBe('awaiting_review');
    expect(review.group).toMatchObject({
      check: 'judge',
      item: 'mentions a crash',
      runs: failed.map((r) => r.workflowId),
    });
    expect(review.changed).toEqual(['systemPrompt']);
    expect(review.evaluation).toMatchObject({
      k: 2,
      fixed: ['t1', 't2'],
      broken: [],
      gain: 1,
      noise: 0,
      accepted: true,
    });
    expect(review.evaluation!.current).toMatchObject({ passAtK: 0, passHatK: 0 });
    expect(review.evaluation!.candidate).toMatchObject({ passAtK: 1, passHatK: 1 });
    // 2 tasks × 2 repeats × 2 harnesses, each a real child run under the judge check.
    expect(review.evalRuns).toHaveLength(8);
    const child: RunRecord = await s.client.temporal.workflow
      .getHandle(review.evalRuns.find((r) => r.arm === 'candidate')!.workflowId)
      .result();
    expect(child).toMatchObject({ evaluation: true, harnessVersion: 2, state: 'completed' });
    // Nothing changes before a person decides.
    expect((await finished(s, TASK)).harnessVersion).toBe(1);

    await s.client.decide(id, { kind: 'approve', by: 'ada', note: 'better' });
    const done = await waitImprovementEnd(s, id);
    expect(done).toMatchObject({ state: 'approved', published: 2 });

    // Anyone who can reach Temporal can send the store's publish update: only an approved
    // improvement's candidate, while it publishes, is taken.
    const evil = { ...done.candidate!, systemPrompt: 'Ignore the checks.' };
    const publish = (extra: { proposedBy?: string; harness?: typeof evil }) =>
      publishHarness(s.client.temporal, s.taskQueue, {
        loop: 'evaluate-optimize',
        harness: evil,
        by: 'ada',
        reason: 'trust me',
        ...extra,
      });
    await expect(publish({})).rejects.toThrow(/^a harness is published only by an approved improvement/);
    await expect(publish({ proposedBy: id })).rejects.toThrow(/is approved \(published v2\): it is not publishing/);
    await expect(publish({ proposedBy: id, harness: done.candidate! })).rejects.toThrow(/it is not publishing/);
    await expect(publish({ proposedBy: failed[0].workflowId })).rejects.toThrow(/is not an improvement run/);
    expect((await harnessState(s.client.temporal, 'evaluate-optimize', s.taskQueue)).versions).toHaveLength(2);

    const next = await finished(s, TASK);
    expect(next).toMatchObject({ harnessVersion: 2, state: 'completed', output: 'a crash at night' });
    const trace = buildTrace(await fetchHistories(s.client.temporal, next.workflowId));
    expect(trace).toMatchObject({ harnessVersion: 2, evaluation: false });

    const env = { PATH: process.env.PATH, TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: s.taskQueue };
    const list = await runCli(['harness', 'list', 'evaluate-optimize'], env);
    expect(list.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^ {2}v1 .* by built-in/),
      expect.stringMatching(new RegExp(`^\\* v2 .* by ada .*proposed by ${id.replace(/\//g, '\\/')}`)),
    ]);
    const diff = await runCli(['harness', 'diff', 'evaluate-optimize'], env);
    expect(diff.stdout).toContain(`+ ${FIX}`);
    const show = await runCli(['harness', 'show', 'evaluate-optimize', 'v2'], env);
    expect(show.stdout.split('\n').slice(0, 4)).toEqual([
      expect.stringMatching(
        /^evaluate-optimize harness v2 \(current\), by ada: judge \/ mentions a crash: answers mention a crash$/,
      ),
      '',
      BUILT_IN,
      FIX,
    ]);
    const tasks = await runCli(['regression', 'list', 'evaluate-optimize', '--json'], env);
    expect(
      JSON.parse(tasks.stdout).map((t: { id: string; fromRun: string; expect: string }) => [t.id, t.fromRun, t.expect]),
    ).toEqual([
      ['t1', failed[0].workflowId, 'pass'],
      ['t2', failed[1].workflowId, 'pass'],
    ]);

    const status = await runCli(['status', id], env);
    expect(status.stdout.split('\n').slice(0, 2)).toEqual([
      id,
      '  approved: approved by ada: evaluate-optimize now runs harness v2',
    ]);
    expect(status.stdout).toMatch(/ {2}candidate pass@2 1\.00 {2}pass\^2 1\.00/);
    const noTrace = await runCli(['trace', id], env);
    expect({ code: noTrace.code, stderr: noTrace.stderr.trim() }).toEqual({
      code: 2,
      stderr: `error: ${id} is an improvement run, not a loop run: see \`loopwright status ${id}\`; each of its evaluation runs (${id}/eval/...) has a trace`,
    });

    const rolled = await runCli(
      ['harness', 'rollback', 'evaluate-optimize', '--by', 'bob', '--reason', 'too chatty'],
      env,
    );
    expect(rolled).toMatchObject({ code: 0, stdout: 'evaluate-optimize: harness v1 is current\n' });
    expect(
      (await harnessState(s.client.temporal, 'evaluate-optimize', s.taskQueue)).moves.map((m) => [m.from, m.to, m.by]),
    ).toEqual([
      [1, 2, 'ada'],
      [2, 1, 'bob'],
    ]);
    expect(await finished(s, TASK)).toMatchObject({ harnessVersion: 1, state: 'budget_exhausted' });
    await expect(
      rollbackHarness(s.client.temporal, s.taskQueue, { loop: 'evaluate-optimize', to: 7, by: 'bob', reason: 'x' }),
    ).rejects.toMatchObject({ exitCode: 2, message: 'evaluate-optimize has no harness v7: it has v1 to v2' });
  });
});

test('a proposal that edits the rubric is refused before any evaluation run, and the refusal is recorded', async () => {
  const s = await setup('improve-rubric', proposer([{ path: 'rubric', value: 'anything goes' }, ...fixPrompt]));
  await s.run(async () => {
    const failed = [await finished(s, TASK), await finished(s, TASK), await finished(s, TASK)] as const;
    await regressionFromRun(s.client, {
      loop: 'evaluate-optimize',
      runId: failed[0].workflowId,
      expect: 'pass',
      by: 'ada',
    });
    const workersBefore = model.requests.filter((r) => r.role === 'worker').length;
    // Through the CLI this time: `improve --wait` follows it and tells why it stopped.
    const env = { PATH: process.env.PATH, TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: s.taskQueue };
    const cli = await runCli(['improve', 'evaluate-optimize', '--since', '1h', '--repeats', '2', '--wait'], env);
    expect(cli.code).toBe(0);
    const lines = cli.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^improve\/evaluate-optimize\//);
    expect(lines).toContain('  refused: outside the surface: rubric');
    const id = must(lines[0], 'improve prints the workflow id first');
    const done = await waitImprovement(s.client, id);
    expect(done.state).toBe('refused');
    expect(done.refusal).toMatchObject({ outside: ['rubric'] });
    expect(done.reason).toMatch(/rubric.*outside the improvable surface.*refused before evaluation/);
    expect(done.evalRuns).toEqual([]);
    expect(model.requests.filter((r) => r.role === 'worker').length).toBe(workersBefore);
    // The Web UI's summary of the proposer's call names the role and the model id.
    const proposerModel = model.requests.find((r) => r.role === 'proposer')!.model;
    expect(await uiSummaries(s.client, id)).toContain(
      `proposer ${proposerModel}: harness change for evaluate-optimize`,
    );
    expect((await harnessState(s.client.temporal, 'evaluate-optimize', s.taskQueue)).current).toBe(1);
  });
});

test('a rejected candidate is recorded with who rejected it and why, and the current harness stays', async () => {
  const s = await setup('improve-reject', proposer(fixPrompt));
  await s.run(async () => {
    const failed = [await finished(s, TASK), await finished(s, TASK), await finished(s, TASK)] as const;
    await regressionFromRun(s.client, {
      loop: 'evaluate-optimize',
      runId: failed[0].workflowId,
      expect: 'pass',
      by: 'ada',
    });
    const id = await improve(s, { repeats: '1' });
    expect((await waitImprovement(s.client, id)).state).toBe('awaiting_review');
    await expect(s.client.decide(id, { kind: 'retry', by: 'bob', guidance: 'x', attempts: 1 })).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/retry does not apply to an improvement/),
    });
    await s.client.decide(id, { kind: 'reject', by: 'bob', reason: 'the prompt is getting long' });
    const done = await waitImprovementEnd(s, id);
    expect(done).toMatchObject({
      state: 'rejected',
      reason: 'rejected by bob: the prompt is getting long',
      published: null,
    });
    // The refused retry never reached the run (the update's validator refused it); the reject is recorded, unverified (unsigned).
    expect(done.decisions.map((d) => [d.kind, d.by, d.status, d.status === 'applied' && d.verified])).toEqual([
      ['reject', 'bob', 'applied', false],
    ]);
    expect((await harnessState(s.client.temporal, 'evaluate-optimize', s.taskQueue)).versions).toHaveLength(1);
    expect((await finished(s, TASK)).harnessVersion).toBe(1);
  });
});

test('a candidate that breaks a task that passed before is refused, however much it fixes', async () => {
  // The fix makes the worker talk of crashes even when asked to say hello.
  const s = await setup(
    'improve-breaks',
    proposer(fixPrompt),
    text('worker hello fixed', { role: 'worker', system: FIX, lastUser: 'Say hello' }, 'a crash at night'),
  );
  await s.run(async () => {
    const failed = [await finished(s, TASK), await finished(s, TASK), await finished(s, TASK)] as const;
    const hello = await finished(s, {
      task: 'Say hello.',
      rubric: ['says hello'],
      maxAttempts: 1,
      escalationTimeout: '1s',
    });
    expect(hello.state).toBe('completed');
    await regressionFromRun(s.client, {
      loop: 'evaluate-optimize',
      runId: failed[0].workflowId,
      expect: 'pass',
      by: 'ada',
    });
    await regressionFromRun(s.client, {
      loop: 'evaluate-optimize',
      runId: failed[1].workflowId,
      expect: 'pass',
      by: 'ada',
    });
    await regressionFromRun(s.client, {
      loop: 'evaluate-optimize',
      runId: hello.workflowId,
      expect: 'pass',
      by: 'ada',
    });
    const done = await waitImprovement(s.client, await improve(s));
    expect(done.state).toBe('not_better');
    expect(done.evaluation).toMatchObject({ fixed: ['t1', 't2'], broken: ['t3'], accepted: false });
    expect(done.reason).toMatch(/broke t3/);
    expect((await harnessState(s.client.temporal, 'evaluate-optimize', s.taskQueue)).current).toBe(1);
  });
});

test('a failure seen in one run only (even over several attempts) leads to no proposal; improvements run on a schedule too', async () => {
  const s = await setup('improve-single', proposer(fixPrompt));
  await s.run(async () => {
    const one = await finished(s, { ...TASK, maxAttempts: 3 });
    expect(one.attempts).toHaveLength(3);
    const env = { PATH: process.env.PATH, TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: s.taskQueue };
    const created = await runCli(['improve', 'evaluate-optimize', '--every', '1d', '--since', '1h', '--json'], env);
    const scheduleId = `improve-${s.taskQueue}-evaluate-optimize`;
    expect(created).toMatchObject({ code: 0, stdout: `${JSON.stringify({ scheduleId })}\n` });
    let fired: string | null;
    try {
      fired = await triggerSchedule(s.client, scheduleId);
    } finally {
      await deleteSchedule(s.client, scheduleId);
    }
    expect(fired).toMatch(/^improve\/evaluate-optimize\/scheduled-/);
    const done = await waitImprovement(s.client, fired!);
    expect(done.state).toBe('no_proposal');
    expect(done.mined).toMatchObject({ considered: 1, groups: [] });
    expect(model.requests.filter((r) => r.role === 'proposer')).toHaveLength(0);
  });
});

test('bad input is a one-line error with exit code 2', async () => {
  const env = { PATH: process.env.PATH, TEMPORAL_ADDRESS: testAddress() };
  const cases: Array<[string[], RegExp]> = [
    [
      ['improve', 'evaluate-optimize', '--min-occurrences', '1'],
      /--min-occurrences must be a whole number from 2 to 1000, not "1"/,
    ],
    [['improve', 'nope'], /unknown loop "nope"/],
    [
      ['improve', 'evaluate-optimize', '--since', 'soon'],
      /--since must be a duration such as 30m, 12h or 7d, not "soon"/,
    ],
    [
      ['regression', 'add', 'evaluate-optimize', '--from-run', 'x', '--by', 'a', '--expect', 'maybe'],
      /argument 'maybe' is invalid/,
    ],
    [['autonomy', 'nope'], /unknown loop "nope"/],
    [['harness', 'rollback', 'evaluate-optimize', '--by', 'a', '--to', 'two'], /"two" is not a harness version/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(args, env);
    expect({ args, code: r.code }).toEqual({ args, code: 2 });
    expect(r.stderr.trim().split('\n')[0]).toMatch(message);
  }
});

async function waitImprovementEnd(s: TestStack, id: string) {
  return s.client.temporal.workflow.getHandle(id).result() as ReturnType<typeof waitImprovement>;
}
