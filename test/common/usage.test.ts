import { ZERO_USAGE, addUsage, type Usage } from '../../common/usage';
import { mustTake } from '../../common/must';

const usage = (partial: Partial<Usage>): Usage => ({ ...ZERO_USAGE, ...partial });

describe('addUsage', () => {
  test('of nothing is zero usage', () => {
    expect(addUsage()).toEqual(ZERO_USAGE);
  });

  test('sums every token field and the cost', () => {
    const a = usage({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 3, cacheWriteTokens: 4, costUsd: 0.0015 });
    const b = usage({ inputTokens: 50, outputTokens: 5, cacheReadTokens: 7, cacheWriteTokens: 1, costUsd: 0.0025 });
    expect(addUsage(a, b)).toEqual({
      inputTokens: 150,
      outputTokens: 25,
      cacheReadTokens: 10,
      cacheWriteTokens: 5,
      costUsd: 0.004,
    });
  });

  test('rounds the cost to a millionth of a dollar, so 0.1 + 0.2 is exactly 0.3', () => {
    expect(addUsage(usage({ costUsd: 0.1 }), usage({ costUsd: 0.2 })).costUsd).toBe(0.3);
  });

  test('a cost summed a thousand times one micro-dollar at a time stays exact', () => {
    const parts = Array.from({ length: 1000 }, () => usage({ costUsd: 0.000001 }));
    expect(addUsage(...parts).costUsd).toBe(0.001);
  });

  test('the cost is the same whichever order the parts are added in', () => {
    const parts = [0.123457, 0.000001, 1.1, 0.2, 0.3].map((costUsd) => usage({ costUsd }));
    const forward = addUsage(...parts).costUsd;
    expect(addUsage(...[...parts].reverse()).costUsd).toBe(forward);
    const [first, second] = mustTake(parts, 2, 'five parts');
    expect(addUsage(addUsage(first, second), addUsage(...parts.slice(2))).costUsd).toBe(forward);
    expect(forward).toBe(1.723458);
  });

  test('does not modify its arguments or ZERO_USAGE', () => {
    const a = usage({ inputTokens: 1, costUsd: 0.5 });
    addUsage(a, a);
    expect(a).toEqual(usage({ inputTokens: 1, costUsd: 0.5 }));
    expect(ZERO_USAGE).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
    });
    expect(Object.isFrozen(ZERO_USAGE)).toBe(true);
  });
});
