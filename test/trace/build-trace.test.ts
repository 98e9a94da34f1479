import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildTrace } from '../../client/trace/build-trace';
import type { History, HistoryEvent } from '../../client/trace/history';

/** A committed history (test/replay/histories), as `fetchHistory()` would return it. */
function recorded(name: 'feedback' | 'escalate' | 'approve' | 'agent'): History {
  return historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, '..', 'replay', 'histories', `replay-${name}.json`), 'utf8')));
}

describe('buildTrace over recorded histories', () => {
  test('feedback run: two attempts, the first fails with the judge reason and its feedback goes to attempt 2', () => {
    const trace = buildTrace([recorded('feedback')]);
    expect(trace).toMatchObject({ version: 1, workflowId: 'replay-feedback', runs: 1, loop: 'evaluate-optimize', specVersion: '2', autonomy: 'L1', task: 'Write a haiku about crashes.' });
    expect(trace.trigger).toEqual({ kind: 'client', by: null });
    expect(trace.budget.maxAttempts).toBe(2);
    expect(trace.rubricHash).toMatch(/^sha256:/);
    expect(trace.attempts.map((a) => [a.n, a.passed, a.candidate])).toEqual([[1, false, 'first'], [2, true, 'a crash, fixed']]);
    const [first, second] = trace.attempts;
    expect(first.modelCalls).toEqual([expect.objectContaining({ activity: 'generateCandidate', attempt: 1, turn: null, try: 1, tokens: 101, error: null })]);
    expect(first.checks).toEqual([expect.objectContaining({ check: 'judge', kind: 'judge', passed: false, reason: 'misses: mentions a crash', failedItems: ['mentions a crash'] })]);
    expect(first.feedback).toMatchObject({ toAttempt: 2, reasons: ['misses: mentions a crash'], corrections: ['Fix: mentions a crash.'] });
    expect(second.feedback).toBeNull();
    expect(second.checks[0].passed).toBe(true);
    expect(trace.outcome).toMatchObject({ status: 'completed', state: 'completed', stopReason: 'passed', ok: true, override: false, output: 'a crash, fixed' });
    expect(trace.usage.inputTokens + trace.usage.outputTokens).toBe(1101);
    expect(trace.escalations).toEqual([]);
    expect(trace.decisions).toEqual([]);
    // Times run forward from the start.
    const offsets = [first.offsetMs, first.checks[0].offsetMs, second.offsetMs, trace.outcome!.offsetMs];
    expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
  });

  test('escalate run: escalates when the attempt budget is spent, then a retry by ada with guidance runs attempt 2', () => {
    const trace = buildTrace([recorded('escalate')]);
    expect(trace.escalations).toEqual([
      expect.objectContaining({ kind: 'budget', reason: 'attempt budget exhausted: 1/1 attempts used', outcome: 'decided', deadline: expect.any(String) }),
    ]);
    expect(trace.decisions).toEqual([
      expect.objectContaining({ kind: 'retry', by: 'ada', guidance: 'Name the crash.', attempts: 1, status: 'applied', refusal: null, override: false }),
    ]);
    expect(trace.decisions[0].offsetMs).toBeGreaterThan(trace.escalations[0].offsetMs);
    expect(trace.attempts[1].offsetMs).toBeGreaterThan(trace.decisions[0].offsetMs);
    expect(trace.attempts.map((a) => a.passed)).toEqual([false, true]);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });

  test('approve run: approve by ada of a failed attempt is recorded as a human override', () => {
    const trace = buildTrace([recorded('approve')]);
    expect(trace.attempts).toHaveLength(1);
    expect(trace.attempts[0].passed).toBe(false);
    expect(trace.attempts[0].feedback).toBeNull();
    expect(trace.decisions).toEqual([expect.objectContaining({ kind: 'approve', by: 'ada', note: 'override', status: 'applied', override: true })]);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'approved', ok: true, override: true, output: 'first' });
  });

  test("agent run: the agent's tool calls in order, with the denied write_file and its reason", () => {
    const trace = buildTrace([recorded('agent')]);
    const [attempt] = trace.attempts;
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
    expect(attempt.toolCalls[0].preview).toBe('the crash happened at 3am\n');
    expect(attempt.toolCalls[2].deniedReason).toMatch(/write_file is a write tool and this run is L1/);
    expect(attempt.candidate).toBe('a crash at 3am (notes.txt:1)');
    expect(attempt.passed).toBe(true);
  });

  test('a run still going (no completion event) has no outcome and sums the usage it has seen', () => {
    const history = recorded('feedback');
    const running = { events: history.events!.slice(0, 17) };
    const trace = buildTrace([running]);
    expect(trace.outcome).toBeNull();
    expect(trace.attempts[0].checks[0].passed).toBe(false);
    expect(trace.attempts[0].passed).toBe(false);
    expect(trace.usage.inputTokens).toBe(99 + 378);
  });

  test('a run that continued as new is told as one story across its histories', () => {
    const events = recorded('feedback').events!;
    const cut = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'generateCandidate' && Number(e.eventId) > 8);
    const first = { events: [...events.slice(0, cut), { eventTime: events[cut - 1].eventTime, workflowExecutionContinuedAsNewEventAttributes: {} } as HistoryEvent] };
    const second = { events: [events[0], ...events.slice(cut)] };
    const trace = buildTrace([first, second]);
    expect(trace.runs).toBe(2);
    expect(trace.attempts.map((a) => [a.n, a.passed, a.modelCalls.length, a.checks.length])).toEqual([[1, false, 1, 1], [2, true, 1, 1]]);
    expect(trace.attempts[0].feedback?.toAttempt).toBe(2);
    expect(trace.outcome).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });

  test('refuses a history that does not start a loopWorkflow', () => {
    expect(() => buildTrace([{ events: [] }])).toThrow(/does not start with a loopWorkflow start event/);
  });
});
