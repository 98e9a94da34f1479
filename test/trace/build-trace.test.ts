import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { buildTrace } from '../../trace/build-trace';
import { summaryOf, type History, type HistoryEvent } from '../../trace/history';
import { modelCallSummary } from '../../common/activity-summary';
import { must, mustTake } from '../../common/must';

type Recorded = 'feedback' | 'escalate' | 'approve' | 'agent' | 'pass' | 'budget' | 'effect' | 'sandbox';

/** A committed history (test/replay/histories), as `fetchHistory()` would return it; `summaries` rewrites the UI summaries. */
function recorded(name: Recorded, summaries?: (summary: string) => string): History {
  const json = JSON.parse(
    readFileSync(path.join(__dirname, '..', 'replay', 'histories', `replay-${name}.json`), 'utf8'),
  ) as { events: Array<{ userMetadata?: { summary?: { data: string } } }> };
  for (const e of json.events) {
    const summary = e.userMetadata?.summary;
    if (summary && summaries)
      summary.data = Buffer.from(
        JSON.stringify(summaries(JSON.parse(Buffer.from(summary.data, 'base64').toString('utf8')) as string)),
      ).toString('base64');
  }
  return historyFromJSON(json);
}

/** The summaries of model calls as runs before the model port wrote them, in today's form (role and model id). */
function portSummary(summary: string): string {
  const turn = /^claude: (turn \d+ \(attempt \d+\))(?:, try (\d+))?$/.exec(summary);
  if (turn) return modelCallSummary('worker', 'claude-sonnet-5-5', must(turn[1], 'a turn group'), Number(turn[2] ?? 1));
  const single = /^claude \(worker\): (attempt \d+)(?:, try (\d+))?$/.exec(summary);
  if (single)
    return modelCallSummary('worker', 'claude-sonnet-5-5', must(single[1], 'an attempt group'), Number(single[2] ?? 1));
  const judge = /^check (\S+) \(judge\): attempt (\d+)(?:, try (\d+))?$/.exec(summary);
  if (judge)
    return modelCallSummary(
      'checker',
      'claude-haiku-5-5',
      `check ${judge[1]} (attempt ${judge[2]})`,
      Number(judge[3] ?? 1),
    );
  return summary;
}

describe('buildTrace over recorded histories', () => {
  test('pass run: one attempt, one passing verdict, completed (passed), no waits', () => {
    const trace = buildTrace([recorded('pass')]);
    expect(trace.attempts.map((a) => [a.n, a.passed, a.candidate, a.checks.map((c) => [c.check, c.passed])])).toEqual([
      [1, true, 'a crash at dawn', [['judge', true]]],
    ]);
    expect(trace.attempts[0]?.feedback).toBeNull();
    expect(trace.escalations).toEqual([]);
    expect(trace.outcome).toMatchObject({
      status: 'completed',
      state: 'completed',
      stopReason: 'passed',
      ok: true,
      output: 'a crash at dawn',
    });
  });

  test('sandbox run: the command check ran in bubblewrap, and the trace says so; runs from before the sandbox say nothing', () => {
    const trace = buildTrace([recorded('sandbox')]);
    expect(trace.sandbox).toBe('bwrap');
    expect(trace.attempts[0]?.checks).toEqual([
      expect.objectContaining({ check: 'answer', kind: 'command', passed: true, sandbox: 'bwrap' }),
    ]);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed' });
    const old = buildTrace([recorded('effect')]);
    expect(old.sandbox).toBeNull();
    expect(old.attempts.flatMap((a) => [...a.checks, ...a.toolCalls]).every((c) => c.sandbox === null)).toBe(true);
  });

  test('budget run: the attempt budget is spent, nobody decides by the deadline, the run stops budget_exhausted', () => {
    const trace = buildTrace([recorded('budget')]);
    expect(trace.budget.maxAttempts).toBe(1);
    expect(trace.attempts.map((a) => a.passed)).toEqual([false]);
    expect(trace.escalations).toEqual([
      expect.objectContaining({
        kind: 'budget',
        reason: 'attempt budget exhausted: 1/1 attempts used',
        outcome: 'timed_out',
      }),
    ]);
    const [escalation] = mustTake(trace.escalations, 1, 'the run escalated');
    expect(Date.parse(escalation.deadline!) - Date.parse(escalation.at)).toBe(2000);
    expect(trace.decisions).toEqual([]);
    expect(trace.outcome).toMatchObject({ state: 'budget_exhausted', stopReason: 'attempts', ok: false, output: null });
  });

  test('effect run (L2 fix-test): a refused cheating attempt, a verified fix, approval by ada, one commit with its key', () => {
    const trace = buildTrace([recorded('effect')]);
    expect(trace).toMatchObject({ loop: 'fix-test', autonomy: 'L2', itemKey: 'add adds two numbers' });
    const [cheat, fix] = mustTake(trace.attempts, 2, 'the fix-test run has two attempts');
    expect(cheat.checks.map((c) => [c.check, c.passed])).toEqual([
      ['tests pass', true],
      ['change policy', false],
    ]);
    expect(cheat.checks[1]?.reason).toMatch(/removed test cases from test\/math\.test\.js/);
    expect(cheat.feedback).toMatchObject({ toAttempt: 2 });
    expect(fix.toolCalls.map((c) => [c.name, c.summary, c.allowed])).toEqual([
      ['read_file', 'src/math.js', true],
      ['read_file', 'test/math.test.js', true],
      ['edit_file', 'src/math.js', true],
      ['write_file', 'test/math.test.js', true],
      ['run_command', 'node --test', true],
    ]);
    expect(fix.passed).toBe(true);
    expect(trace.escalations).toEqual([expect.objectContaining({ kind: 'approval', outcome: 'decided' })]);
    expect(trace.decisions).toEqual([
      expect.objectContaining({ kind: 'approve', by: 'ada', note: 'ship it', status: 'applied', override: false }),
    ]);
    expect(trace.effects).toEqual([
      expect.objectContaining({
        key: 'replay-effect/commit/1',
        name: 'commit',
        kind: 'git_commit',
        target: 'main',
        commit: expect.stringMatching(/^[0-9a-f]{40}$/),
        alreadyApplied: false,
        error: null,
      }),
    ]);
    const [effect] = mustTake(trace.effects, 1, 'the run applied its effect');
    const [decision] = mustTake(trace.decisions, 1, 'the run was decided');
    expect(Date.parse(effect.at)).toBeGreaterThan(Date.parse(decision.at));
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed', override: false });
  });

  test('feedback run: two attempts, the first fails with the judge reason and its feedback goes to attempt 2', () => {
    const trace = buildTrace([recorded('feedback')]);
    expect(trace).toMatchObject({
      version: 1,
      workflowId: 'replay-feedback',
      runs: 1,
      loop: 'evaluate-optimize',
      specVersion: '2',
      autonomy: 'L1',
      task: 'Write a haiku about crashes.',
    });
    expect(trace.trigger).toEqual({ kind: 'client', by: null });
    expect(trace.budget.maxAttempts).toBe(2);
    expect(trace.rubricHash).toMatch(/^sha256:/);
    expect(trace.attempts.map((a) => [a.n, a.passed, a.candidate])).toEqual([
      [1, false, 'first'],
      [2, true, 'a crash, fixed'],
    ]);
    const [first, second] = mustTake(trace.attempts, 2, 'the run has two attempts');
    expect(first.modelCalls).toEqual([
      expect.objectContaining({
        activity: 'generateCandidate',
        attempt: 1,
        turn: null,
        try: 1,
        tokens: 101,
        error: null,
      }),
    ]);
    expect(first.checks).toEqual([
      expect.objectContaining({
        check: 'judge',
        kind: 'judge',
        passed: false,
        reason: 'misses: mentions a crash',
        failedItems: ['mentions a crash'],
      }),
    ]);
    expect(first.feedback).toMatchObject({
      toAttempt: 2,
      reasons: ['misses: mentions a crash'],
      corrections: ['Fix: mentions a crash.'],
    });
    expect(second.feedback).toBeNull();
    expect(second.checks[0]?.passed).toBe(true);
    expect(trace.outcome).toMatchObject({
      status: 'completed',
      state: 'completed',
      stopReason: 'passed',
      ok: true,
      override: false,
      output: 'a crash, fixed',
    });
    expect(trace.usage.inputTokens + trace.usage.outputTokens).toBe(1101);
    expect(trace.escalations).toEqual([]);
    expect(trace.decisions).toEqual([]);
    // Times run forward from the start.
    const offsets = [
      first.offsetMs,
      must(first.checks[0], 'the first attempt was checked').offsetMs,
      second.offsetMs,
      trace.outcome!.offsetMs,
    ];
    expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
  });

  test('escalate run: escalates when the attempt budget is spent, then a retry by ada with guidance runs attempt 2', () => {
    const trace = buildTrace([recorded('escalate')]);
    expect(trace.escalations).toEqual([
      expect.objectContaining({
        kind: 'budget',
        reason: 'attempt budget exhausted: 1/1 attempts used',
        outcome: 'decided',
        deadline: expect.any(String),
      }),
    ]);
    expect(trace.decisions).toEqual([
      expect.objectContaining({
        kind: 'retry',
        by: 'ada',
        guidance: 'Name the crash.',
        attempts: 1,
        status: 'applied',
        refusal: null,
        override: false,
      }),
    ]);
    const [escalation] = mustTake(trace.escalations, 1, 'the run escalated');
    const [decision] = mustTake(trace.decisions, 1, 'the run was decided');
    expect(decision.offsetMs).toBeGreaterThan(escalation.offsetMs);
    expect(trace.attempts[1]?.offsetMs).toBeGreaterThan(decision.offsetMs);
    expect(trace.attempts.map((a) => a.passed)).toEqual([false, true]);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });

  test('approve run: approve by ada of a failed attempt is recorded as a human override', () => {
    const trace = buildTrace([recorded('approve')]);
    expect(trace.attempts).toHaveLength(1);
    expect(trace.attempts[0]?.passed).toBe(false);
    expect(trace.attempts[0]?.feedback).toBeNull();
    expect(trace.decisions).toEqual([
      expect.objectContaining({ kind: 'approve', by: 'ada', note: 'override', status: 'applied', override: true }),
    ]);
    expect(trace.outcome).toMatchObject({
      state: 'completed',
      stopReason: 'approved',
      ok: true,
      override: true,
      output: 'first',
    });
  });

  test("agent run: the agent's tool calls in order, with the denied write_file and its reason", () => {
    const trace = buildTrace([recorded('agent')]);
    const [attempt] = mustTake(trace.attempts, 1, 'the agent run has an attempt');
    expect(attempt.modelCalls.map((c) => [c.activity, c.turn, c.toolCalls])).toEqual([
      ['modelTurn', 1, ['read_file', 'list_files']],
      ['modelTurn', 2, ['write_file']],
      ['modelTurn', 3, []],
    ]);
    expect(attempt.toolCalls.map((c) => [c.turn, c.name, c.summary, c.allowed, c.isError])).toEqual([
      [1, 'read_file', 'notes.txt', true, false],
      [1, 'list_files', '.', true, false],
      [2, 'write_file', 'x.txt', false, true],
    ]);
    expect(attempt.toolCalls[0]?.preview).toBe('the crash happened at 3am\n');
    expect(attempt.toolCalls[2]?.deniedReason).toMatch(/write_file is a write tool and this run is L1/);
    expect(attempt.candidate).toBe('a crash at 3am (notes.txt:1)');
    expect(attempt.passed).toBe(true);
  });

  test('a run still going (no completion event) has no outcome and sums the usage it has seen', () => {
    const history = recorded('feedback');
    const running = { events: history.events!.slice(0, 17) };
    const trace = buildTrace([running]);
    expect(trace.outcome).toBeNull();
    expect(trace.attempts[0]?.checks[0]?.passed).toBe(false);
    expect(trace.attempts[0]?.passed).toBe(false);
    expect(trace.usage.inputTokens).toBe(99 + 378);
  });

  test('a run that continued as new is told as one story across its histories', () => {
    const events = recorded('feedback').events!;
    const cut = events.findIndex(
      (e) =>
        e.activityTaskScheduledEventAttributes?.activityType?.name === 'generateCandidate' && Number(e.eventId) > 8,
    );
    const first = {
      events: [
        ...events.slice(0, cut),
        { eventTime: events[cut - 1]?.eventTime, workflowExecutionContinuedAsNewEventAttributes: {} } as HistoryEvent,
      ],
    };
    const second = { events: [...events.slice(0, 1), ...events.slice(cut)] };
    const trace = buildTrace([first, second]);
    expect(trace.runs).toBe(2);
    expect(trace.attempts.map((a) => [a.n, a.passed, a.modelCalls.length, a.checks.length])).toEqual([
      [1, false, 1, 1],
      [2, true, 1, 1],
    ]);
    expect(trace.attempts[0]?.feedback?.toAttempt).toBe(2);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });

  test.each<Recorded>(['agent', 'feedback', 'escalate', 'effect'])(
    '%s run: model calls summarised the old way (claude) and the new way (role and model id) trace alike',
    (name) => {
      const before = recorded(name);
      const after = recorded(name, portSummary);
      const summaries = (h: History) => h.events!.map((e) => summaryOf(e)).filter((x): x is string => x !== null);
      expect(summaries(before).some((x) => x.startsWith('claude'))).toBe(true);
      expect(summaries(after).some((x) => x.startsWith('claude'))).toBe(false);
      expect(summaries(after).some((x) => /^(worker claude-sonnet-5-5|checker claude-haiku-5-5): /.test(x))).toBe(true);
      expect(buildTrace([after])).toEqual(buildTrace([before]));
    },
  );

  test('refuses a history that does not start a loop run', () => {
    expect(() => buildTrace([{ events: [] }])).toThrow(/does not start with the start event of a loop run/);
  });
});
