import { ConfigError } from '../common/errors';
import { DEFAULT_PRICES, priceOf, type ModelPrice } from '../common/pricing';

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
    throw new ConfigError(`LOOPWRIGHT_PRICES is not valid JSON (${(err as Error).message.replace(/\s+/g, ' ')}): give an object of model id to prices`);
  }
}

/** The prices of just the given models, as a run pins them. */
export function pinPrices(models: string[], table: Record<string, ModelPrice>): Record<string, ModelPrice> {
  return Object.fromEntries(models.map((m) => [m, priceOf(m, table)]));
}
