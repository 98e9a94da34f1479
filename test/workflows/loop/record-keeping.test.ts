import { LoopSpecSchema } from '../../../common/loop-spec';
import { unitLoopInput } from '../../helpers/loop-input';
import type { Verdict } from '../../../common/run-record';
import { ZERO_USAGE, type Usage } from '../../../common/usage';
import { chargeUsage, feedbackFrom, newRecord, recordAttempt } from '../../../workflows/loop/record-keeping';
import { limitsOf } from '../../../common/budget';

const NOW = '2025-01-02T03:04:05.000Z';
const input = unitLoopInput({ version: '7', budget: { maxAttempts: 4 } });

const usage = (input: number, output: number, costUsd: number): Usage => ({
  ...ZERO_USAGE,
  inputTokens: input,
  outputTokens: output,
  costUsd,
});
const verdict = (check: string, passed: boolean, u: Usage = usage(10, 1, 0.001)): Verdict => ({
  check,
  kind: 'judge',
  passed,
  reason: passed ? `${check} ok` : `${check} failed`,
  failedItems: passed ? [] : [`${check} item`],
  requiredCorrection: passed ? '' : `fix ${check}`,
  usage: u,
});

describe('newRecord', () => {
  test('starts running with no attempts, zero usage and the pinned spec values', () => {
    const record = newRecord('evaluate-optimize/run-1', input, NOW);
    expect(record).toMatchObject({
      workflowId: 'evaluate-optimize/run-1',
      loop: 'evaluate-optimize',
      specVersion: '7',
      autonomy: 'L2',
      task: 'Write a haiku.',
      rubricHash: 'sha256:abc',
      state: 'running',
      ok: false,
      output: null,
      attempt: 0,
      attempts: [],
      budget: {
        maxAttempts: 4,
        maxTokens: null,
        maxCostUsd: null,
        maxWallTimeMs: null,
        used: { attempts: 0, tokens: 0, costUsd: 0, wallTimeMs: 0, sideEffects: 0 },
        extensions: [],
      },
      stopReason: null,
      startedAt: NOW,
      endedAt: null,
    });
    expect(record.usage).toEqual({ total: ZERO_USAGE, worker: ZERO_USAGE, checker: ZERO_USAGE });
  });

  test('usage objects are fresh copies, so charging one record cannot change another', () => {
    const a = newRecord('a', input, NOW);
    const b = newRecord('b', input, NOW);
    expect(a.usage.total).not.toBe(b.usage.total);
    expect(a.usage.worker).not.toBe(a.usage.checker);
  });
});

describe('limitsOf', () => {
  test('reads the pinned budget, durations in milliseconds and absent limits as unlimited', () => {
    const spec = LoopSpecSchema.parse({
      ...input.spec,
      budget: { maxAttempts: 2, maxWallTime: '90s', maxTokens: 1000, maxCostUsd: 0.5 },
    });
    expect(limitsOf(spec.budget)).toEqual({
      maxAttempts: 2,
      maxWallTimeMs: 90_000,
      maxTokens: 1000,
      maxCostUsd: 0.5,
      maxSideEffects: undefined,
    });
    expect(limitsOf(input.spec.budget)).toMatchObject({
      maxAttempts: 4,
      maxWallTimeMs: undefined,
      maxTokens: undefined,
      maxCostUsd: undefined,
    });
  });
});

describe('chargeUsage', () => {
  test('charges the role and the total, and keeps the budget use (input + output tokens, dollars) in step', () => {
    const record = newRecord('r', input, NOW);
    chargeUsage(record, 'worker', usage(100, 50, 0.01));
    chargeUsage(record, 'checker', usage(30, 5, 0.002));
    chargeUsage(record, 'worker', { ...usage(10, 1, 0.001), cacheReadTokens: 500 });
    expect(record.usage.worker).toEqual({ ...usage(110, 51, 0.011), cacheReadTokens: 500 });
    expect(record.usage.checker).toEqual(usage(30, 5, 0.002));
    expect(record.usage.total).toEqual({ ...usage(140, 56, 0.013), cacheReadTokens: 500 });
    expect(record.budget.used.tokens).toBe(196);
    expect(record.budget.used.costUsd).toBe(0.013);
  });
});

describe('recordAttempt', () => {
  const attempt = (
    record = newRecord('r', input, NOW),
    n = 1,
    candidate: string | null = 'c',
    verdicts: Verdict[] = [],
    extra = {},
  ) => recordAttempt(record, { n, candidate, usage: usage(5, 5, 0.001), verdicts, ...extra });

  test('counts attempts used and keeps the usage it is given', () => {
    const record = newRecord('r', input, NOW);
    attempt(record, 1, 'a', [verdict('judge', false)]);
    const second = attempt(record, 2, 'b', [verdict('judge', true)]);
    expect(record.attempts.map((a) => a.n)).toEqual([1, 2]);
    expect(record.budget.used.attempts).toBe(2);
    expect(second.usage).toEqual(usage(5, 5, 0.001));
  });

  test('passes when every verdict passes', () => {
    const a = attempt(undefined, 1, 'c', [verdict('judge', true), verdict('style', true)]);
    expect(a.passed).toBe(true);
    expect(a.reasons).toEqual([]);
  });

  test('fails when any verdict fails, keeping the failing reasons only', () => {
    const a = attempt(undefined, 1, 'c', [verdict('judge', true), verdict('style', false)]);
    expect(a.passed).toBe(false);
    expect(a.reasons).toEqual(['style failed']);
  });

  test('fails when there is no verdict at all', () => {
    expect(attempt(undefined, 1, 'c', []).passed).toBe(false);
  });

  test('fails when the attempt was stopped, even with passing verdicts, and gives the stop as a reason', () => {
    const a = attempt(undefined, 1, 'c', [verdict('judge', true)], {
      stopped: { reason: 'time', detail: 'wall time ran out during attempt 1' },
    });
    expect(a.passed).toBe(false);
    expect(a.reasons).toEqual(['wall time ran out during attempt 1']);
    expect(a.stopped).toEqual({ reason: 'time', detail: 'wall time ran out during attempt 1' });
  });

  test('fails when there is no candidate', () => {
    expect(attempt(undefined, 1, null, [verdict('judge', true)]).passed).toBe(false);
  });
});

describe('feedbackFrom', () => {
  test('carries the attempt number, candidate and only the failing verdicts', () => {
    const a = recordAttempt(newRecord('r', input, NOW), {
      n: 3,
      candidate: 'cand 3',
      usage: ZERO_USAGE,
      verdicts: [verdict('judge', false), verdict('style', true), verdict('facts', false)],
    });
    expect(feedbackFrom(a)).toEqual({
      kind: 'attempt',
      attempt: 3,
      candidate: 'cand 3',
      failures: [
        { check: 'judge', reason: 'judge failed', failedItems: ['judge item'], requiredCorrection: 'fix judge' },
        { check: 'facts', reason: 'facts failed', failedItems: ['facts item'], requiredCorrection: 'fix facts' },
      ],
    });
  });

  test('an attempt without a candidate gives no feedback', () => {
    const a = recordAttempt(newRecord('r', input, NOW), {
      n: 1,
      candidate: null,
      usage: ZERO_USAGE,
      verdicts: [],
      stopped: { reason: 'tokens', detail: 'x' },
    });
    expect(feedbackFrom(a)).toBeUndefined();
  });
});
