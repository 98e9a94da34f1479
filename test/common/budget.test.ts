import type { ModelPrice } from '../../common/pricing';
import {
  MIN_OUTPUT_TOKENS,
  NO_USE,
  attemptStop,
  describeStop,
  effectStop,
  extendLimits,
  extensionOf,
  limitsIn,
  limitsOf,
  newRunBudget,
  planCall,
  setLimits,
  spentStop,
  type BudgetLimits,
  type BudgetUse,
} from '../../common/budget';

const PRICE: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const use = (more: Partial<BudgetUse>): BudgetUse => ({ ...NO_USE, ...more });

describe('planCall', () => {
  test('with room to spare the call gets the requested max_tokens', () => {
    expect(
      planCall({ maxAttempts: 3, maxTokens: 100_000, maxCostUsd: 10 }, NO_USE, {
        inputTokens: 1000,
        requested: 4096,
        price: PRICE,
      }),
    ).toEqual({ ok: true, maxTokens: 4096 });
  });

  test('a token budget lowers max_tokens to what is left after the input', () => {
    const plan = planCall({ maxAttempts: 3, maxTokens: 10_000 }, use({ tokens: 8000 }), {
      inputTokens: 1500,
      requested: 4096,
      price: PRICE,
    });
    expect(plan).toEqual({ ok: true, maxTokens: 500 });
  });

  test('a cost budget lowers max_tokens to what the dollars left pay for at the output price', () => {
    // $0.01 left, input costs 1000 * $3/M = $0.003, so $0.007 buys 466 output tokens at $15/M
    const plan = planCall({ maxAttempts: 3, maxCostUsd: 0.05 }, use({ costUsd: 0.04 }), {
      inputTokens: 1000,
      requested: 4096,
      price: PRICE,
    });
    expect(plan).toEqual({ ok: true, maxTokens: 466 });
  });

  test('a call whose input leaves less than MIN_OUTPUT_TOKENS is refused on tokens with what it needs and what is left', () => {
    const plan = planCall({ maxAttempts: 3, maxTokens: 1000 }, use({ tokens: 900 }), {
      inputTokens: 50,
      requested: 4096,
      price: PRICE,
    });
    expect(plan).toEqual({ ok: false, stop: 'tokens', needed: 50 + MIN_OUTPUT_TOKENS, left: 100 });
  });

  test('an overspent token budget is refused with zero left, never a negative amount', () => {
    const plan = planCall({ maxAttempts: 3, maxTokens: 1000 }, use({ tokens: 1200 }), {
      inputTokens: 10,
      requested: 100,
      price: PRICE,
    });
    expect(plan).toMatchObject({ ok: false, stop: 'tokens', left: 0 });
  });

  test('a call the dollars left cannot pay the floor for is refused on cost with the amounts in dollars', () => {
    const plan = planCall({ maxAttempts: 3, maxCostUsd: 0.01 }, use({ costUsd: 0.0095 }), {
      inputTokens: 1000,
      requested: 4096,
      price: PRICE,
    });
    // the floor costs 1000 * $3/M + 64 * $15/M = $0.00396, and $0.0005 is left
    expect(plan).toEqual({ ok: false, stop: 'cost', needed: 0.00396, left: 0.0005 });
  });

  test('a small request below MIN_OUTPUT_TOKENS is allowed when exactly that many tokens are left', () => {
    expect(
      planCall({ maxAttempts: 1, maxTokens: 30 }, NO_USE, { inputTokens: 10, requested: 20, price: PRICE }),
    ).toEqual({ ok: true, maxTokens: 20 });
  });

  test('a free model is never stopped by a cost budget', () => {
    const free: ModelPrice = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    expect(
      planCall({ maxAttempts: 1, maxCostUsd: 1 }, use({ costUsd: 0.5 }), {
        inputTokens: 10,
        requested: 2048,
        price: free,
      }),
    ).toEqual({ ok: true, maxTokens: 2048 });
  });
});

describe('attemptStop and spentStop', () => {
  const limits: BudgetLimits = { maxAttempts: 3, maxWallTimeMs: 60_000, maxTokens: 1000, maxCostUsd: 0.5 };

  test('nothing spent: both return null', () => {
    expect(attemptStop(limits, NO_USE)).toBeNull();
    expect(spentStop(limits, NO_USE)).toBeNull();
  });

  test('attempts used up is reported first, even when every other budget is spent too', () => {
    expect(attemptStop(limits, use({ attempts: 3, wallTimeMs: 60_000, tokens: 1000, costUsd: 0.5 }))).toBe('attempts');
  });

  test('spentStop ignores attempts: they are checked only before an attempt starts', () => {
    expect(spentStop(limits, use({ attempts: 99 }))).toBeNull();
  });

  test.each([
    ['time', { wallTimeMs: 60_000 }],
    ['tokens', { tokens: 1000 }],
    ['cost', { costUsd: 0.5 }],
  ] as const)('%s spent is reported as %s by both', (reason, spent) => {
    expect(spentStop(limits, use(spent))).toBe(reason);
    expect(attemptStop(limits, use({ attempts: 1, ...spent }))).toBe(reason);
  });

  test('cost within a nano-dollar of the limit counts as spent (float sums of micro-dollars)', () => {
    expect(spentStop({ maxAttempts: 1, maxCostUsd: 0.3 }, use({ costUsd: 0.1 + 0.2 - 1e-12 }))).toBe('cost');
    expect(spentStop({ maxAttempts: 1, maxCostUsd: 0.3 }, use({ costUsd: 0.299 }))).toBeNull();
  });

  test('unlimited time, tokens and cost are never spent', () => {
    expect(spentStop({ maxAttempts: 1 }, use({ wallTimeMs: 1e12, tokens: 1e12, costUsd: 1e6 }))).toBeNull();
  });
});

describe('extendLimits', () => {
  const limits: BudgetLimits = {
    maxAttempts: 3,
    maxWallTimeMs: 60_000,
    maxTokens: 1000,
    maxCostUsd: 0.1,
    maxSideEffects: 2,
  };

  test('adds each given amount to its limit and leaves the rest unchanged', () => {
    expect(extendLimits(limits, { tokens: 500 })).toEqual({ ...limits, maxTokens: 1500 });
    expect(extendLimits(limits, { attempts: 2, wallTimeMs: 30_000 })).toEqual({
      ...limits,
      maxAttempts: 5,
      maxWallTimeMs: 90_000,
    });
  });

  test('a cost extension adds to a defined limit and is rounded to micro-dollars', () => {
    expect(extendLimits(limits, { costUsd: 0.2 }).maxCostUsd).toBe(0.3);
  });

  test('an empty extension changes nothing', () => {
    expect(extendLimits(limits, {})).toEqual(limits);
  });

  test('does not change the limits it is given', () => {
    const before = { ...limits };
    extendLimits(limits, { attempts: 1, tokens: 1, costUsd: 1, wallTimeMs: 1 });
    expect(limits).toEqual(before);
  });

  test('after extending a spent cost budget the run may go on', () => {
    const spent = use({ costUsd: 0.1 });
    expect(spentStop(limits, spent)).toBe('cost');
    expect(spentStop(extendLimits(limits, { costUsd: 0.05 }), spent)).toBeNull();
  });
});

describe('describeStop', () => {
  const limits: BudgetLimits = { maxAttempts: 3, maxWallTimeMs: 120_000, maxTokens: 5000, maxCostUsd: 0.01 };

  test('attempts: says how many of how many were used', () => {
    expect(describeStop('attempts', limits, use({ attempts: 3 }))).toContain('3/3 attempts');
  });

  test('time: gives seconds used of seconds allowed', () => {
    expect(describeStop('time', limits, use({ wallTimeMs: 121_400 }))).toContain('121s of 120s');
  });

  test('tokens: gives tokens used of tokens allowed', () => {
    expect(describeStop('tokens', limits, use({ tokens: 5012 }))).toContain('5012/5000 tokens');
  });

  test('cost: gives dollars to four places', () => {
    expect(describeStop('cost', limits, use({ costUsd: 0.01 }))).toContain('$0.0100 of $0.0100');
  });
});

describe('effectStop: the side-effect gate', () => {
  test('stops an effect once maxSideEffects are applied, and only the effect gate looks at them', () => {
    const limits: BudgetLimits = { maxAttempts: 1, maxSideEffects: 2 };
    expect(effectStop(limits, use({ sideEffects: 1 }))).toBeNull();
    expect(effectStop(limits, use({ sideEffects: 2 }))).toBe('effects');
    expect(describeStop('effects', limits, use({ sideEffects: 2 }))).toBe(
      'side-effect budget exhausted: 2/2 effects applied',
    );
    expect(attemptStop(limits, use({ sideEffects: 5 }))).toBeNull();
    expect(effectStop({ maxAttempts: 1 }, use({ sideEffects: 99 }))).toBeNull();
  });
});

describe("the run record's budget", () => {
  test('keeps its JSON shape: every limit (null when unlimited), then the use, then the extensions', () => {
    const budget = newRunBudget(limitsOf({ maxAttempts: 3, maxWallTime: '90s', maxCostUsd: 0.5 }));
    expect(JSON.stringify(budget)).toBe(
      '{"maxAttempts":3,"maxWallTimeMs":90000,"maxTokens":null,"maxCostUsd":0.5,"maxSideEffects":null,"used":{"attempts":0,"wallTimeMs":0,"tokens":0,"costUsd":0,"sideEffects":0},"extensions":[]}',
    );
  });

  test('holds the limits: an extension written into it reads back, and unlimited stays unlimited', () => {
    const budget = newRunBudget({ maxAttempts: 2, maxTokens: 1000 });
    setLimits(
      budget,
      extendLimits(limitsIn(budget), extensionOf({ attempts: 1, tokens: 500, wallTime: '1m', costUsd: 1 })),
    );
    expect(limitsIn(budget)).toEqual({ maxAttempts: 3, maxTokens: 1500 });
    expect(budget).toMatchObject({ maxAttempts: 3, maxTokens: 1500, maxWallTimeMs: null, maxCostUsd: null });
  });

  test('an extend decision reads durations in milliseconds', () => {
    expect(extensionOf({ wallTime: '2m', costUsd: 0.25 })).toEqual({ wallTimeMs: 120_000, costUsd: 0.25 });
  });
});
