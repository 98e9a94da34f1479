import { DEFAULT_PRICES, costOf, type ModelPrice } from '../../common/pricing';

const MILLION = {
  inputTokens: 1_000_000,
  outputTokens: 1_000_000,
  cacheReadTokens: 1_000_000,
  cacheWriteTokens: 1_000_000,
};
const NONE = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
const sumOf = (p: ModelPrice) => p.input + p.output + p.cacheRead + p.cacheWrite;

describe('costOf', () => {
  test('prices a known model per million tokens', () => {
    expect(costOf('claude-sonnet-4-6', { ...NONE, inputTokens: 1_000_000 })).toBe(3);
    expect(costOf('claude-sonnet-4-6', { ...NONE, outputTokens: 2_000_000 })).toBe(30);
    expect(costOf('claude-haiku-4-5', { ...NONE, inputTokens: 1234, outputTokens: 567 })).toBe(0.004069);
  });

  test('prices cache reads and cache writes at their own rates', () => {
    expect(costOf('claude-sonnet-4-6', { ...NONE, cacheReadTokens: 1_000_000 })).toBe(0.3);
    expect(costOf('claude-sonnet-4-6', { ...NONE, cacheWriteTokens: 1_000_000 })).toBe(3.75);
    expect(costOf('claude-sonnet-4-6', MILLION)).toBe(22.05);
  });

  test('no tokens cost nothing', () => {
    expect(costOf('claude-opus-5', NONE)).toBe(0);
  });

  test('an unknown model is charged at the most expensive known rate, never 0', () => {
    const maxRate = Math.max(...Object.values(DEFAULT_PRICES).map(sumOf));
    const cost = costOf('gpt-unknown-7', MILLION);
    expect(cost).toBeGreaterThan(0);
    expect(cost).toBe(maxRate);
    for (const model of Object.keys(DEFAULT_PRICES)) expect(cost).toBeGreaterThanOrEqual(costOf(model, MILLION));
    expect(costOf('gpt-unknown-7', { ...NONE, outputTokens: 1 })).toBeGreaterThan(0);
  });

  test("with a custom price table, an unknown model is charged at that table's most expensive rate", () => {
    const prices: Record<string, ModelPrice> = {
      cheap: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 },
      dear: { input: 10, output: 40, cacheRead: 1, cacheWrite: 12.5 },
    };
    expect(costOf('cheap', MILLION, prices)).toBe(4.35);
    expect(costOf('mystery', MILLION, prices)).toBe(63.5);
  });

  test('with an empty price table, an unknown model still costs something', () => {
    expect(costOf('mystery', { ...NONE, inputTokens: 1_000_000 }, {})).toBeGreaterThan(0);
  });

  test('rounds to a millionth of a dollar', () => {
    const cost = costOf('claude-sonnet-4-6', { ...NONE, inputTokens: 333_333, cacheReadTokens: 7 });
    expect(cost).toBe(1.000001);
    expect(Math.round(cost * 1e6) / 1e6).toBe(cost);
  });
});
