import type { ModelPrice } from '../common/pricing';

/**
 * Budget arithmetic, pure so it can be property-tested and replayed. A run's limits are pinned
 * at start; only a human decision (recorded) extends them.
 */
export interface BudgetLimits {
  maxAttempts: number;
  /** Active time the run may spend working (waits for humans do not count). */
  maxWallTimeMs?: number;
  /** Input + output tokens of every model call. */
  maxTokens?: number;
  maxCostUsd?: number;
  maxSideEffects?: number;
}

export interface BudgetUse {
  attempts: number;
  wallTimeMs: number;
  tokens: number;
  costUsd: number;
  sideEffects: number;
}

export type BudgetStop = 'attempts' | 'time' | 'tokens' | 'cost';

/** What a human may add to a budget. */
export interface BudgetExtension {
  attempts?: number;
  tokens?: number;
  costUsd?: number;
  wallTimeMs?: number;
}

export const NO_USE: BudgetUse = Object.freeze({ attempts: 0, wallTimeMs: 0, tokens: 0, costUsd: 0, sideEffects: 0 });

/** Smallest answer worth asking a model for; a call that can afford less is not made. */
export const MIN_OUTPUT_TOKENS = 64;

/** The first budget that is spent, checked before an attempt starts; null when it may start. */
export function attemptStop(limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  if (used.attempts >= limits.maxAttempts) return 'attempts';
  return spentStop(limits, used);
}

/** The first of time, tokens and cost that is spent; null when none is. */
export function spentStop(limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  if (limits.maxWallTimeMs !== undefined && used.wallTimeMs >= limits.maxWallTimeMs) return 'time';
  if (limits.maxTokens !== undefined && used.tokens >= limits.maxTokens) return 'tokens';
  if (limits.maxCostUsd !== undefined && used.costUsd >= limits.maxCostUsd - 1e-9) return 'cost';
  return null;
}

/** A conservative estimate of the input tokens of a prompt of `chars` characters. */
export function estimateInputTokens(chars: number): number {
  return Math.ceil(chars / 3) + 16;
}

export type CallPlan =
  | { ok: true; maxTokens: number }
  | { ok: false; stop: 'tokens' | 'cost'; needed: number; left: number };

/**
 * Whether the remaining budget can pay for a model call whose input is about `inputTokens`,
 * and the largest `max_tokens` it can pay for (at most `requested`). The call is refused when
 * that is below `min(requested, MIN_OUTPUT_TOKENS)`: worst case, every output token is spent.
 */
export function planCall(
  limits: BudgetLimits,
  used: BudgetUse,
  call: { inputTokens: number; requested: number; price: ModelPrice },
): CallPlan {
  const floor = Math.min(call.requested, MIN_OUTPUT_TOKENS);
  let maxTokens = call.requested;
  if (limits.maxTokens !== undefined) {
    const left = limits.maxTokens - used.tokens;
    const affordable = left - call.inputTokens;
    if (affordable < floor) return { ok: false, stop: 'tokens', needed: call.inputTokens + floor, left: Math.max(0, left) };
    maxTokens = Math.min(maxTokens, affordable);
  }
  if (limits.maxCostUsd !== undefined) {
    const left = limits.maxCostUsd - used.costUsd;
    const inputCost = (call.inputTokens * call.price.input) / 1e6;
    const affordable =
      inputCost > left + 1e-12 ? -1 : call.price.output > 0 ? Math.floor(((left - inputCost) * 1e6) / call.price.output) : Number.MAX_SAFE_INTEGER;
    if (affordable < floor) {
      return { ok: false, stop: 'cost', needed: round6(inputCost + (floor * call.price.output) / 1e6), left: round6(Math.max(0, left)) };
    }
    maxTokens = Math.min(maxTokens, affordable);
  }
  return { ok: true, maxTokens };
}

/** The limits after a human's extension: each given amount is added to its limit. */
export function extendLimits(limits: BudgetLimits, ext: BudgetExtension): BudgetLimits {
  // An unlimited budget stays unlimited: there is nothing to extend.
  const add = (limit: number | undefined, more: number | undefined) => (limit === undefined || more === undefined ? limit : limit + more);
  return {
    ...limits,
    maxAttempts: limits.maxAttempts + (ext.attempts ?? 0),
    maxWallTimeMs: add(limits.maxWallTimeMs, ext.wallTimeMs),
    maxTokens: add(limits.maxTokens, ext.tokens),
    maxCostUsd: limits.maxCostUsd === undefined || ext.costUsd === undefined ? limits.maxCostUsd : round6(limits.maxCostUsd + ext.costUsd),
  };
}

/** A one-line account of a spent budget, with the numbers. */
export function describeStop(stop: BudgetStop, limits: BudgetLimits, used: BudgetUse): string {
  switch (stop) {
    case 'attempts':
      return `attempt budget exhausted: ${used.attempts}/${limits.maxAttempts} attempts used`;
    case 'time':
      return `wall-time budget exhausted: ${Math.round(used.wallTimeMs / 1000)}s of ${Math.round((limits.maxWallTimeMs ?? 0) / 1000)}s used`;
    case 'tokens':
      return `token budget exhausted: ${used.tokens}/${limits.maxTokens} tokens used`;
    case 'cost':
      return `cost budget exhausted: $${used.costUsd.toFixed(4)} of $${(limits.maxCostUsd ?? 0).toFixed(4)} used`;
  }
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
