/** Token use and cost of one or more model calls, as the run record shows it (whole, non-negative numbers of tokens). */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
}

/** Usage of nothing at all. */
export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
});

/** Sum of usages; cost is rounded to a millionth of a dollar so sums stay stable. */
export function addUsage(...items: Usage[]): Usage {
  const total = { ...ZERO_USAGE };
  for (const u of items) {
    total.inputTokens += u.inputTokens;
    total.outputTokens += u.outputTokens;
    total.cacheReadTokens += u.cacheReadTokens;
    total.cacheWriteTokens += u.cacheWriteTokens;
    total.costUsd = Math.round((total.costUsd + u.costUsd) * 1e6) / 1e6;
  }
  return total;
}
