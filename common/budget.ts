import { parseDuration } from './duration';
import type { ModelPrice } from './pricing';

/**
 * A run's budget, in one module: the spec's schema, the limits a run obeys, what it has used,
 * the record's shape, and the gates that stop it. Every dimension is one row of
 * `BUDGET_DIMENSIONS`; the types, the schema and the functions below (stop, describe, extend,
 * the record) loop over the table. A new dimension is one row plus its accounting where the use
 * happens (see docs/extending.md). Pure, so workflows replay it and tests property-test it.
 */
interface Dimension {
  /** The limit's name in a loop spec's `budget` (its schema is `BudgetSchema` in loop-spec.ts: optional, so older specs still parse). */
  spec: string;
  /** The limit's name in `BudgetLimits` and in the record's `budget`. */
  limit: string;
  /** The use's name in `BudgetUse` and in the record's `budget.used`. */
  use: string;
  /** The stop reason when it is spent. */
  stop: 'attempts' | 'time' | 'tokens' | 'cost' | 'effects';
  /**
   * When it is checked: `attempt` before an attempt starts; `spend` before an attempt and
   * before every model call; `effect` before every effect is applied.
   */
  gate: 'attempt' | 'spend' | 'effect';
  /** The limit from the spec's value, when the spec does not give it as a number. */
  fromSpec?: (value: string) => number | undefined;
  spent(used: number, limit: number): boolean;
  /** A one-line account of the spent budget, with the numbers. */
  describe(used: number, limit: number): string;
  /** When a person may extend it: the `extend` decision's field, how it reads, and whether sums round to micro-units. */
  extend?: {
    field: 'attempts' | 'tokens' | 'costUsd' | 'wallTime';
    amount?: (value: string) => number | undefined;
    round?: boolean;
  };
}

const atLeast = (used: number, limit: number) => used >= limit;

/** Every budget dimension, in the order its stop is checked. */
export const BUDGET_DIMENSIONS = [
  {
    spec: 'maxAttempts',
    limit: 'maxAttempts',
    use: 'attempts',
    stop: 'attempts',
    gate: 'attempt',
    spent: atLeast,
    describe: (used, limit) => `attempt budget exhausted: ${used}/${limit} attempts used`,
    extend: { field: 'attempts' },
  },
  {
    // Wall time counts the time the run works, not the time it waits for a human.
    spec: 'maxWallTime',
    limit: 'maxWallTimeMs',
    use: 'wallTimeMs',
    stop: 'time',
    gate: 'spend',
    fromSpec: parseDuration,
    spent: atLeast,
    describe: (used, limit) =>
      `wall-time budget exhausted: ${Math.round(used / 1000)}s of ${Math.round(limit / 1000)}s used`,
    extend: { field: 'wallTime', amount: parseDuration },
  },
  {
    // Input + output tokens of every model call.
    spec: 'maxTokens',
    limit: 'maxTokens',
    use: 'tokens',
    stop: 'tokens',
    gate: 'spend',
    spent: atLeast,
    describe: (used, limit) => `token budget exhausted: ${used}/${limit} tokens used`,
    extend: { field: 'tokens' },
  },
  {
    spec: 'maxCostUsd',
    limit: 'maxCostUsd',
    use: 'costUsd',
    stop: 'cost',
    gate: 'spend',
    spent: (used, limit) => used >= limit - 1e-9,
    describe: (used, limit) => `cost budget exhausted: $${used.toFixed(4)} of $${limit.toFixed(4)} used`,
    extend: { field: 'costUsd', round: true },
  },
  {
    // Effects (reports, commits) a verified run applies.
    spec: 'maxSideEffects',
    limit: 'maxSideEffects',
    use: 'sideEffects',
    stop: 'effects',
    gate: 'effect',
    spent: atLeast,
    describe: (used, limit) => `side-effect budget exhausted: ${used}/${limit} effects applied`,
  },
] as const satisfies readonly Dimension[];

type Row = (typeof BUDGET_DIMENSIONS)[number];
type Optional<R> = R extends { limit: 'maxAttempts' } ? never : R;

/** A limit's name in a loop spec's `budget`. */
export type BudgetSpecName = Row['spec'];
/** A loop spec's `budget`, as `BudgetSchema` (loop-spec.ts) parses it: durations as text. */
export type BudgetSpec = { maxAttempts: number } & {
  [R in Optional<Row> as R['spec']]?: R extends { fromSpec: unknown } ? string : number;
};

/** The limits a run obeys: pinned at start, extended only by a human decision (recorded). Absent = unlimited. */
export type BudgetLimits = { maxAttempts: number } & { [R in Optional<Row> as R['limit']]?: number };
/** What a run has used, per dimension. */
export type BudgetUse = { [R in Row as R['use']]: number };
/** Why a budget stopped the run. */
export type BudgetStop = Row['stop'];
/** What a human may add to a budget, per use. */
export type BudgetExtension = { [R in Extract<Row, { extend: object }> as R['use']]?: number };

/** The run record's budget: the limits (null = unlimited), the use and every extension. Its JSON shape is stable. */
export type RunBudget = { maxAttempts: number } & { [R in Optional<Row> as R['limit']]: number | null } & {
  used: BudgetUse;
  /** Every extension a human granted, with who and how much. */
  extensions: Array<{
    by: string;
    at: string;
    attempts?: number;
    tokens?: number;
    costUsd?: number;
    wallTime?: string;
    guidance?: string;
    /** False when the decision was unsigned (`by` is only what its sender claimed); absent when verified or from before. */
    verified?: false;
  }>;
};

type Numbers = Record<string, number | undefined>;
const read = (o: object, key: string) => (o as Numbers)[key];

export const NO_USE: BudgetUse = Object.freeze(
  Object.fromEntries(BUDGET_DIMENSIONS.map((d) => [d.use, 0])) as BudgetUse,
);

/** The limits a run starts with, from its pinned spec: durations in milliseconds, absent limits unlimited. */
export function limitsOf(budget: BudgetSpec): BudgetLimits {
  const out: Numbers = {};
  for (const d of BUDGET_DIMENSIONS) {
    const value = (budget as Record<string, number | string | undefined>)[d.spec];
    out[d.limit] = value === undefined ? undefined : 'fromSpec' in d ? d.fromSpec(String(value)) : Number(value);
  }
  return out as BudgetLimits;
}

/** The record's budget for a run that starts with `limits`: nothing used, nothing extended. */
export function newRunBudget(limits: BudgetLimits): RunBudget {
  const out: Record<string, unknown> = {};
  for (const d of BUDGET_DIMENSIONS) out[d.limit] = read(limits, d.limit) ?? null;
  return { ...(out as Omit<RunBudget, 'used' | 'extensions'>), used: { ...NO_USE }, extensions: [] };
}

/** The limits the record's budget holds (null = unlimited). */
export function limitsIn(budget: RunBudget): BudgetLimits {
  const out: Numbers = {};
  for (const d of BUDGET_DIMENSIONS) out[d.limit] = read(budget, d.limit) ?? undefined;
  return out as BudgetLimits;
}

/** Writes `limits` into the record's budget. */
export function setLimits(budget: RunBudget, limits: BudgetLimits): void {
  for (const d of BUDGET_DIMENSIONS)
    (budget as unknown as Record<string, number | null>)[d.limit] = read(limits, d.limit) ?? null;
}

/** Smallest answer worth asking a model for; a call that can afford less is not made. */
export const MIN_OUTPUT_TOKENS = 64;

function firstSpent(gates: ReadonlyArray<Row['gate']>, limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  for (const d of BUDGET_DIMENSIONS) {
    const limit = read(limits, d.limit);
    if (gates.includes(d.gate) && limit !== undefined && d.spent(read(used, d.use)!, limit)) return d.stop;
  }
  return null;
}

/** The first budget that is spent, checked before an attempt starts; null when it may start. */
export function attemptStop(limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  return firstSpent(['attempt', 'spend'], limits, used);
}

/** The first of time, tokens and cost that is spent; null when none is. */
export function spentStop(limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  return firstSpent(['spend'], limits, used);
}

/** `effects` when one more effect would pass maxSideEffects; null when it may be applied. */
export function effectStop(limits: BudgetLimits, used: BudgetUse): BudgetStop | null {
  return firstSpent(['effect'], limits, used);
}

/** A one-line account of a spent budget, with the numbers. */
export function describeStop(stop: BudgetStop, limits: BudgetLimits, used: BudgetUse): string {
  const d = BUDGET_DIMENSIONS.find((row) => row.stop === stop)!;
  return d.describe(read(used, d.use)!, read(limits, d.limit) ?? 0);
}

/** The limits after a human's extension: each given amount is added to its limit. */
export function extendLimits(limits: BudgetLimits, ext: BudgetExtension): BudgetLimits {
  const out: Numbers = { ...limits };
  for (const d of BUDGET_DIMENSIONS) {
    if (!('extend' in d)) continue;
    const limit = out[d.limit];
    const more = read(ext, d.use);
    // An unlimited budget stays unlimited: there is nothing to extend.
    if (limit === undefined || more === undefined) continue;
    out[d.limit] = 'round' in d.extend ? round6(limit + more) : limit + more;
  }
  return out as BudgetLimits;
}

/** What an `extend` decision adds, per use (durations in milliseconds). */
export function extensionOf(
  decision: Partial<Record<'attempts' | 'tokens' | 'costUsd', number>> & { wallTime?: string },
): BudgetExtension {
  const out: Numbers = {};
  for (const d of BUDGET_DIMENSIONS) {
    if (!('extend' in d)) continue;
    const value = decision[d.extend.field];
    out[d.use] =
      value === undefined ? undefined : 'amount' in d.extend ? d.extend.amount(String(value)) : Number(value);
  }
  return out as BudgetExtension;
}

/** A conservative estimate of the input tokens of a prompt of `chars` characters. */
export function estimateInputTokens(chars: number): number {
  return Math.ceil(chars / 3) + 16;
}

export type CallPlan =
  { ok: true; maxTokens: number } | { ok: false; stop: 'tokens' | 'cost'; needed: number; left: number };

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
    if (affordable < floor)
      return { ok: false, stop: 'tokens', needed: call.inputTokens + floor, left: Math.max(0, left) };
    maxTokens = Math.min(maxTokens, affordable);
  }
  if (limits.maxCostUsd !== undefined) {
    const left = limits.maxCostUsd - used.costUsd;
    const inputCost = (call.inputTokens * call.price.input) / 1e6;
    const affordable =
      inputCost > left + 1e-12
        ? -1
        : call.price.output > 0
          ? Math.floor(((left - inputCost) * 1e6) / call.price.output)
          : Number.MAX_SAFE_INTEGER;
    if (affordable < floor) {
      return {
        ok: false,
        stop: 'cost',
        needed: round6(inputCost + (floor * call.price.output) / 1e6),
        left: round6(Math.max(0, left)),
      };
    }
    maxTokens = Math.min(maxTokens, affordable);
  }
  return { ok: true, maxTokens };
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
