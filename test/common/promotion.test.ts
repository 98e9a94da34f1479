import type { DecisionRecord } from '../../common/decision';
import type { Autonomy } from '../../common/loop-spec';
import { classifyRun, promotionEvidence, PromotionRuleSchema, type PromotionRule } from '../../common/promotion';
import type { RunRecord } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { must } from '../../common/must';

let clock = 0;
/** A closed run; each one built ends a minute after the one before. */
function run(id: string, over: Partial<RunRecord> = {}): RunRecord {
  const endedAt = new Date(Date.UTC(2025, 0, 1) + ++clock * 60_000).toISOString();
  return {
    workflowId: id,
    loop: 'fix-test',
    specVersion: '1',
    autonomy: 'L1',
    task: 't',
    rubricHash: 'sha256:x',
    state: 'completed',
    ok: true,
    output: 'out',
    override: false,
    attempt: 1,
    attempts: [],
    workspace: null,
    pendingReview: null,
    budget: {
      maxAttempts: 3,
      maxWallTimeMs: null,
      maxTokens: null,
      maxCostUsd: null,
      maxSideEffects: null,
      used: { attempts: 1, wallTimeMs: 0, tokens: 0, costUsd: 0, sideEffects: 0 },
      extensions: [],
    },
    decision: null,
    decisions: [],
    stopReason: 'passed',
    escalation: null,
    usage: { total: ZERO_USAGE, worker: ZERO_USAGE, checker: ZERO_USAGE },
    effects: [],
    audit: null,
    error: null,
    startedAt: endedAt,
    endedAt,
    ...over,
  };
}
const at = '2025-01-01T00:00:00.000Z';
const approve = (status: 'applied' | 'refused' = 'applied', verified = true): DecisionRecord =>
  status === 'applied'
    ? { kind: 'approve', id: 'a', by: 'ada', status, at, verified }
    : { kind: 'approve', id: 'a', by: 'ada', status, at, reason: 'refused' };
const auditOk: DecisionRecord = {
  kind: 'audit',
  id: 'u',
  by: 'ada',
  verdict: 'ok',
  status: 'applied',
  at,
  verified: true,
};
const retry: DecisionRecord = {
  kind: 'retry',
  id: 'r',
  by: 'ada',
  guidance: 'use the helper',
  attempts: 1,
  status: 'applied',
  at,
};
const extend: DecisionRecord = { kind: 'extend', id: 'e', by: 'ada', attempts: 2, status: 'applied', at };

const approvedL2 = (id: string) => run(id, { autonomy: 'L2', decisions: [approve()] });
const rejectedL2 = (id: string) =>
  run(id, {
    autonomy: 'L2',
    state: 'rejected',
    ok: false,
    stopReason: 'rejected',
    decisions: [{ kind: 'reject', id: 'x', by: 'bob', status: 'applied', at }],
  });
const overriddenL2 = (id: string) =>
  run(id, { autonomy: 'L2', override: true, stopReason: 'approved', decisions: [approve()] });
const rule = (over: Partial<PromotionRule> = {}): PromotionRule =>
  PromotionRuleSchema.parse({ to: 'L3', consecutive: 3, of: 'approved_unchanged', ...over });

describe('classifyRun', () => {
  test('an L2 change approved as it was is approved_unchanged', () => {
    expect(classifyRun(approvedL2('a'))).toBe('approved_unchanged');
  });

  test('a run that passed with no approval (L1, L3) is passed; a refused approval does not count', () => {
    expect(classifyRun(run('a'))).toBe('passed');
    expect(classifyRun(run('b', { autonomy: 'L3', decisions: [approve('refused')] }))).toBe('passed');
  });

  test('an approval after an applied budget extension is passed, not approved_unchanged', () => {
    expect(classifyRun(run('a', { autonomy: 'L2', decisions: [extend, approve()] }))).toBe('passed');
  });

  test('a human override, and a pass reached after an applied retry with guidance, are overridden', () => {
    expect(classifyRun(overriddenL2('a'))).toBe('overridden');
    expect(classifyRun(run('b', { autonomy: 'L2', decisions: [retry, approve()] }))).toBe('overridden');
    expect(classifyRun(run('c', { decisions: [retry] }))).toBe('overridden');
  });

  test('a rejected run is rejected', () => {
    expect(classifyRun(rejectedL2('a'))).toBe('rejected');
  });

  test('an approval or audit that was not a verified (signed) decision is unverified: it never counts as evidence', () => {
    expect(classifyRun(run('a', { autonomy: 'L2', decisions: [approve('applied', false)] }))).toBe('unverified');
    expect(
      classifyRun(
        run('b', {
          autonomy: 'L3',
          decisions: [{ ...auditOk, verified: false } as DecisionRecord],
          audit: { needed: true, reason: 'L3 effects', verdict: 'ok', reviewedBy: 'ada' },
        }),
      ),
    ).toBe('unverified');
    const rule = { to: 'L3' as const, consecutive: 2, of: 'approved_unchanged' as const };
    const evidence = promotionEvidence(
      [
        run('c', { autonomy: 'L2', decisions: [approve()] }),
        run('d', { autonomy: 'L2', endedAt: '2025-02-01T00:00:00.000Z', decisions: [approve('applied', false)] }),
      ],
      'L2',
      rule,
    );
    expect(evidence).toMatchObject({ meets: false, streak: 0, brokenBy: { workflowId: 'd', outcome: 'unverified' } });
  });

  test('an audit verdict wins over passed; a bad audit wins over everything but a rejection', () => {
    expect(
      classifyRun(
        run('a', {
          autonomy: 'L3',
          decisions: [auditOk],
          audit: { needed: true, reason: 'L3 effects', verdict: 'ok', reviewedBy: 'ada' },
        }),
      ),
    ).toBe('audited_ok');
    expect(
      classifyRun(
        run('b', { autonomy: 'L3', audit: { needed: true, reason: 'L3 effects', verdict: 'bad', reviewedBy: 'ada' } }),
      ),
    ).toBe('audited_bad');
    expect(
      classifyRun(
        run('c', { override: true, stopReason: 'approved', audit: { needed: true, reason: 'sample', verdict: 'bad' } }),
      ),
    ).toBe('audited_bad');
  });

  test('blocked, budget_exhausted, failed and canceled runs are other', () => {
    for (const [state, stopReason] of [
      ['blocked', 'model_error'],
      ['budget_exhausted', 'attempts'],
      ['failed', 'error'],
      ['canceled', 'canceled'],
    ] as const) {
      expect(classifyRun(run(state, { state, stopReason, ok: false }))).toBe('other');
    }
  });
});

describe('promotionEvidence', () => {
  test('counts each outcome of the runs at the level and ignores other levels and evaluation runs', () => {
    const records = [
      approvedL2('a'),
      approvedL2('b'),
      rejectedL2('c'),
      overriddenL2('d'),
      run('e'),
      run('f', { autonomy: 'L3' }),
      { ...approvedL2('g'), evaluation: true } as RunRecord,
    ];
    const evidence = promotionEvidence(records, 'L2');
    expect(evidence.runs).toBe(4);
    expect(evidence.counts).toEqual({
      approved_unchanged: 2,
      passed: 0,
      audited_ok: 0,
      overridden: 1,
      rejected: 1,
      audited_bad: 0,
      unverified: 0,
      other: 0,
    });
    expect(evidence.verdict).toBe('no promotion rule declared');
    expect(evidence).toMatchObject({ rule: null, meets: false, streak: 0 });
  });

  test('meets its rule when the newest runs, in any order given, all qualify', () => {
    const records = [rejectedL2('old'), approvedL2('a'), approvedL2('b'), approvedL2('c'), approvedL2('d')].reverse();
    const evidence = promotionEvidence(records, 'L2', rule());
    expect(evidence.streak).toBe(4);
    expect(evidence.meets).toBe(true);
    expect(evidence.verdict).toBe(
      'meets its rule: 3 consecutive L2 runs approved unchanged (streak 4) — an operator may grant L3 (loopwright grant)',
    );
  });

  test('a rejection breaks the streak, and the verdict names the run', () => {
    const evidence = promotionEvidence(
      [approvedL2('a'), approvedL2('b'), rejectedL2('c'), approvedL2('d')],
      'L2',
      rule(),
    );
    expect(evidence.streak).toBe(1);
    expect(evidence.meets).toBe(false);
    expect(evidence.brokenBy).toEqual({ workflowId: 'c', outcome: 'rejected' });
    expect(evidence.verdict).toBe(
      'does not meet its rule: 3 consecutive L2 runs approved unchanged (streak 1, broken by run c rejected)',
    );
  });

  test('an override breaks the streak; runs are ordered by when they ended, not when they started', () => {
    const records = [approvedL2('a'), approvedL2('b'), overriddenL2('late'), approvedL2('c'), approvedL2('d')];
    must(records[2], 'five records').startedAt = '2024-01-01T00:00:00.000Z';
    const evidence = promotionEvidence(records, 'L2', rule());
    expect(evidence.streak).toBe(2);
    expect(evidence.verdict).toContain('broken by run late overridden');
  });

  test('too few runs do not meet the rule: the verdict says how many more are needed', () => {
    const evidence = promotionEvidence([approvedL2('a'), approvedL2('b')], 'L2', rule());
    expect(evidence).toMatchObject({ streak: 2, meets: false, brokenBy: null });
    expect(evidence.verdict).toBe(
      'does not meet its rule: 3 consecutive L2 runs approved unchanged (streak 2, 1 more needed)',
    );
  });

  test('for a rule of passed, approved and audited-ok runs qualify too; for audited_ok only audited-ok runs', () => {
    const audited = (id: string) =>
      run(id, { decisions: [auditOk], audit: { needed: true, reason: 'sample', verdict: 'ok' } });
    const records = [run('a'), run('b', { decisions: [approve()] }), audited('c')];
    expect(promotionEvidence(records, 'L1', rule({ to: 'L2', of: 'passed' }))).toMatchObject({
      streak: 3,
      meets: true,
    });
    const strict = promotionEvidence(records, 'L1', rule({ to: 'L2', of: 'audited_ok', consecutive: 1 }));
    expect(strict).toMatchObject({
      streak: 1,
      meets: true,
      brokenBy: { workflowId: 'b', outcome: 'approved_unchanged' },
    });
  });

  test('a rule that raises autonomy to the level the runs already have does not apply', () => {
    const level: Autonomy = 'L3';
    const evidence = promotionEvidence([run('a', { autonomy: level })], level, rule({ consecutive: 1, of: 'passed' }));
    expect(evidence.meets).toBe(false);
    expect(evidence.verdict).toBe('does not apply: the rule raises autonomy to L3 and these runs are L3 already');
  });

  test('the rule schema refuses a level below L2, a zero count and an unknown outcome', () => {
    expect(PromotionRuleSchema.safeParse({ to: 'L1', consecutive: 5, of: 'passed' }).success).toBe(false);
    expect(PromotionRuleSchema.safeParse({ to: 'L2', consecutive: 0, of: 'passed' }).success).toBe(false);
    expect(PromotionRuleSchema.safeParse({ to: 'L2', consecutive: 5, of: 'liked' }).success).toBe(false);
  });
});
