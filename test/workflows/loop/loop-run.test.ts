import type { AppliedDecision } from '../../../common/decision';
import type { LoopInput } from '../../../common/loop-input';
import type { RunRecord } from '../../../common/run-record';
import { ZERO_USAGE, type Usage } from '../../../common/usage';
import { LoopRun, type RunHost, type RunMetrics } from '../../../workflows/loop/loop-run';
import { unitLoopInput } from '../../helpers/loop-input';

const START = Date.parse('2026-01-02T03:04:05.000Z');

const inputWith = (budget: object, extra: Partial<LoopInput> = {}): LoopInput =>
  unitLoopInput({ budget, escalation: { timeout: '1h', approvers: ['ada'] } }, extra);

interface FakeHost extends RunHost {
  time: number;
  shown: Array<{ state: string; details: string }>;
  waits: Array<{ ms: number; summary: string }>;
  /** What a person does while the run waits (nothing: the wait times out). */
  answer?: () => void;
}

/** A host whose clock the test moves and whose waits are answered by `answer` (or time out). */
function fakeHost(): FakeHost {
  const host: FakeHost = {
    time: START,
    shown: [],
    waits: [],
    now: () => host.time,
    show: (record: RunRecord, details: string) => {
      host.shown.push({ state: record.state, details });
    },
    wait: async (ready: () => boolean, ms: number, summary: string) => {
      host.waits.push({ ms, summary });
      host.time += 60_000; // a person takes a minute, or nobody comes
      host.answer?.();
      return ready();
    },
    continueAsNewSuggested: () => false,
    has: () => true,
  };
  return host;
}

function fakeMetrics() {
  const seen = { charged: [] as string[], waited: [] as string[], ended: [] as string[], verdicts: 0 };
  const metrics: RunMetrics = {
    charged: (role) => seen.charged.push(role),
    waited: (kind, _ms, decided) => seen.waited.push(`${kind}:${decided}`),
    ended: (record) => seen.ended.push(record.state),
    verdicts: (vs) => (seen.verdicts += vs.length),
  };
  return { metrics, seen };
}

const usage = (input: number, output: number, costUsd: number): Usage => ({
  ...ZERO_USAGE,
  inputTokens: input,
  outputTokens: output,
  costUsd,
});
const decision = (d: Record<string, unknown>) =>
  ({ id: 'd1', by: 'ada', at: new Date(START).toISOString(), ...d }) as unknown as AppliedDecision;

describe('LoopRun (driven without Temporal)', () => {
  test('charges usage to the role, the total, the attempt and the budget, and a spent token budget stops the next attempt', () => {
    const host = fakeHost();
    const { metrics, seen } = fakeMetrics();
    const run = new LoopRun(inputWith({ maxAttempts: 3, maxTokens: 100 }), 'wf/1', host, metrics);
    expect(run.spent()).toBeNull();
    run.charge('worker', usage(60, 20, 0.01));
    run.charge('checker', usage(15, 5, 0.002));
    expect(run.record.usage.worker.inputTokens).toBe(60);
    expect(run.attemptUsage.costUsd).toBeCloseTo(0.012, 9);
    expect(run.used()).toMatchObject({ tokens: 100, costUsd: 0.012, attempts: 0 });
    expect(seen.charged).toEqual(['worker', 'checker']);
    expect(run.spent()).toBe('tokens');
    expect(run.describe('tokens')).toBe('token budget exhausted: 100/100 tokens used');
  });

  test('escalates with the clock paused, takes the decision a person sent, and an extension lifts the spent budget', async () => {
    const host = fakeHost();
    const { metrics, seen } = fakeMetrics();
    const run = new LoopRun(inputWith({ maxAttempts: 1, maxWallTime: '10m' }), 'wf/2', host, metrics);
    host.time += 5_000;
    run.recordAttempt({ n: 1, candidate: 'a', usage: { ...ZERO_USAGE }, verdicts: [] });
    expect(run.spent()).toBe('attempts');
    host.answer = () => run.receive(decision({ kind: 'extend', attempts: 2, wallTime: '5m' }));
    const got = await run.escalate('budget', 'attempts', run.describe('attempts'));
    expect(run.record.state).toBe('awaiting_human');
    expect(run.record.escalation).toMatchObject({
      kind: 'budget',
      stopReason: 'attempts',
      approvers: ['ada'],
      timedOut: false,
      deadline: new Date(START + 5_000 + 3_600_000).toISOString(),
    });
    expect(host.waits).toEqual([
      { ms: 3_600_000, summary: expect.stringContaining('attempt budget exhausted: 1/1 attempts used') },
    ]);
    expect(run.hasPending()).toBe(false);
    expect(run.decide(got, 'budget', 'attempts')).toBeUndefined();
    expect(run.record.budget).toMatchObject({
      maxAttempts: 3,
      maxWallTimeMs: 900_000,
      extensions: [{ by: 'ada', attempts: 2, wallTime: '5m' }],
    });
    expect(run.spent()).toBeNull();
    // The minute spent waiting for the person does not count as work.
    expect(run.used().wallTimeMs).toBe(5_000);
    expect(seen.waited).toEqual(['budget:true']);
  });

  test('a retry adds attempts and the guidance as feedback; nobody deciding in time ends the run budget_exhausted', async () => {
    const host = fakeHost();
    const { metrics, seen } = fakeMetrics();
    const run = new LoopRun(inputWith({ maxAttempts: 1 }), 'wf/3', host, metrics);
    run.recordAttempt({ n: 1, candidate: 'a', usage: { ...ZERO_USAGE }, verdicts: [] });
    run.receive(decision({ kind: 'retry', attempts: 2, guidance: 'shorter' }));
    expect(run.decide(await run.escalate('budget', 'attempts', 'spent'), 'budget', 'attempts')).toBeUndefined();
    expect(run.limits().maxAttempts).toBe(3);
    expect(run.feedback).toEqual([{ kind: 'human', by: 'ada', guidance: 'shorter' }]);
    const ended = run.decide(await run.escalate('budget', 'attempts', 'spent again'), 'budget', 'attempts');
    expect(ended).toMatchObject({ state: 'budget_exhausted', stopReason: 'attempts', ok: false });
    expect(ended?.escalation?.timedOut).toBe(true);
    expect(seen.ended).toEqual(['budget_exhausted']);
    expect(host.shown.map((s) => s.state)).toEqual(['awaiting_human', 'awaiting_human', 'budget_exhausted']);
  });

  test('an approval ends the run completed as a human override with the last candidate; an audit decision is recorded, not taken', async () => {
    const host = fakeHost();
    const run = new LoopRun(inputWith({ maxAttempts: 2 }), 'wf/4', host, fakeMetrics().metrics);
    run.recordAttempt({ n: 1, candidate: 'first', usage: { ...ZERO_USAGE }, verdicts: [] });
    run.recordAttempt({ n: 2, candidate: null, usage: { ...ZERO_USAGE }, verdicts: [] });
    run.receive(decision({ kind: 'audit', verdict: 'ok' }));
    expect(run.hasPending()).toBe(false);
    run.receive(decision({ kind: 'approve' }));
    const ended = run.decide(await run.escalate('budget', 'attempts', 'spent'), 'budget', 'attempts');
    expect(ended).toMatchObject({
      state: 'completed',
      stopReason: 'approved',
      override: true,
      ok: true,
      output: 'first',
    });
    expect(ended?.audit).toMatchObject({ reviewedBy: 'ada', verdict: 'ok' });
  });

  test('an evaluation run asks nobody: its escalation times out at once', async () => {
    const host = fakeHost();
    const run = new LoopRun(
      inputWith({ maxAttempts: 1 }, { evaluation: true } as Partial<LoopInput>),
      'wf/5',
      host,
      fakeMetrics().metrics,
    );
    expect(await run.escalate('error', 'model_error', 'bad key')).toBeUndefined();
    expect(host.waits).toEqual([]);
    expect(run.record.escalation?.timedOut).toBe(true);
  });

  test('carries its state over a continue-as-new: the record, feedback, limits and active time', () => {
    const host = fakeHost();
    const run = new LoopRun(inputWith({ maxAttempts: 2, maxCostUsd: 1 }), 'wf/6', host, fakeMetrics().metrics);
    host.time += 7_000;
    const state = run.resumeState(undefined);
    expect(state).toMatchObject({
      limits: { maxAttempts: 2, maxCostUsd: 1 },
      activeMs: 7_000,
      session: null,
      feedback: [],
    });
    const resumed = new LoopRun(run.input, 'wf/6', host, fakeMetrics().metrics, state);
    expect(resumed.record).toBe(run.record);
    expect(resumed.used().wallTimeMs).toBe(7_000);
  });
});
