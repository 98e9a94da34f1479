import { ConfigError } from './errors';
import type { Usage } from './usage';

/** US dollars per million tokens for one model. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * List prices per million tokens (cache reads at 0.1x input, cache writes at 1.25x input).
 * Override or extend with `LOOPWRIGHT_PRICES` (a JSON object of model id to ModelPrice).
 * A model missing from the table is charged at the most expensive known rate, so an unknown
 * model never looks free to a budget.
 */
export const DEFAULT_PRICES = {
  'claude-opus-5-5': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-opus-5': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-sonnet-5-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-sonnet-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-sonnet-4-6': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-haiku-5-5': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
} satisfies Record<string, ModelPrice>;

function fallbackPrice(prices: Record<string, ModelPrice>): ModelPrice {
  const all = Object.values(prices);
  return all.reduce((max, p) => (p.output > max.output ? p : max), all[0] ?? DEFAULT_PRICES['claude-opus-5-5']);
}

/** The price of `model` in `prices`, or the most expensive known rate for a model not listed. */
export function priceOf(model: string, prices: Record<string, ModelPrice> = DEFAULT_PRICES): ModelPrice {
  return (Object.hasOwn(prices, model) ? prices[model] : undefined) ?? fallbackPrice(prices);
}

/** Cost in dollars of the given token counts on `model`. */
export function costOf(
  model: string,
  tokens: Omit<Usage, 'costUsd'>,
  prices: Record<string, ModelPrice> = DEFAULT_PRICES,
): number {
  const p = priceOf(model, prices);
  const dollars =
    (tokens.inputTokens * p.input +
      tokens.outputTokens * p.output +
      tokens.cacheReadTokens * p.cacheRead +
      tokens.cacheWriteTokens * p.cacheWrite) /
    1e6;
  return Math.round(dollars * 1e6) / 1e6;
}

/**
 * The price table a client pins into the runs it starts: the built-in table, overridden and
 * extended by LOOPWRIGHT_PRICES (JSON: model id → { input, output, cacheRead, cacheWrite },
 * dollars per million tokens).
 */
export function readPrices(env: Record<string, string | undefined>): Record<string, ModelPrice> {
  if (!env.LOOPWRIGHT_PRICES) return DEFAULT_PRICES;
  try {
    return { ...DEFAULT_PRICES, ...(JSON.parse(env.LOOPWRIGHT_PRICES) as Record<string, ModelPrice>) };
  } catch (err) {
    throw new ConfigError(
      `LOOPWRIGHT_PRICES is not valid JSON (${(err as Error).message.replace(/\s+/g, ' ')}): give an object of model id to prices`,
    );
  }
}

/** The prices of just the given models, as a run pins them. */
export function pinPrices(models: string[], table: Record<string, ModelPrice>): Record<string, ModelPrice> {
  return Object.fromEntries(models.map((m) => [m, priceOf(m, table)]));
}
