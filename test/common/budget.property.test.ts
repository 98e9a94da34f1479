import fc from 'fast-check';
import type { ModelPrice } from '../../common/pricing';
import {
  MIN_OUTPUT_TOKENS,
  attemptStop,
  extendLimits,
  planCall,
  spentStop,
  type BudgetLimits,
  type BudgetUse,
} from '../../common/budget';

/** Dollars as the pricing module produces them: whole micro-dollars. */
const dollars = (max: number) => fc.integer({ min: 0, max: max * 1e6 }).map((micro) => micro / 1e6);
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Per-million prices, output always priced (planCall's cost bound divides by the output price). */
const priceArb: fc.Arbitrary<ModelPrice> = fc.record({
  input: fc.integer({ min: 0, max: 10_000 }).map((c) => c / 100),
  output: fc.integer({ min: 1, max: 20_000 }).map((c) => c / 100),
  cacheRead: fc.constant(0),
  cacheWrite: fc.constant(0),
});
const limitsArb: fc.Arbitrary<BudgetLimits> = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 20 }),
  maxWallTimeMs: optional(fc.integer({ min: 1, max: 3_600_000 })),
  maxTokens: optional(fc.integer({ min: 0, max: 2_000_000 })),
  maxCostUsd: optional(dollars(50)),
});
/** Use may overshoot a limit (a call's real input can exceed its estimate). */
const useArb: fc.Arbitrary<BudgetUse> = fc.record({
  attempts: fc.integer({ min: 0, max: 25 }),
  wallTimeMs: fc.integer({ min: 0, max: 4_000_000 }),
  tokens: fc.integer({ min: 0, max: 2_500_000 }),
  costUsd: dollars(60),
  sideEffects: fc.constant(0),
});
const callArb = fc.record({
  inputTokens: fc.integer({ min: 0, max: 300_000 }),
  requested: fc.integer({ min: 1, max: 64_000 }),
  price: priceArb,
});
const EPS = 1e-9;
const LIMIT = { tokens: 'maxTokens', time: 'maxWallTimeMs', cost: 'maxCostUsd' } as const;
const USE = { tokens: 'tokens', time: 'wallTimeMs', cost: 'costUsd' } as const;
const EXT = { tokens: 'tokens', time: 'wallTimeMs', cost: 'costUsd' } as const;

describe('planCall properties', () => {
  test('an allowed call asks for at most the requested tokens, at least the floor, and its worst case fits every budget left', () => {
    fc.assert(
      fc.property(limitsArb, useArb, callArb, (limits, used, call) => {
        const plan = planCall(limits, used, call);
        fc.pre(plan.ok);
        if (!plan.ok) return;
        expect(Number.isInteger(plan.maxTokens)).toBe(true);
        expect(plan.maxTokens).toBeLessThanOrEqual(call.requested);
        expect(plan.maxTokens).toBeGreaterThanOrEqual(Math.min(call.requested, MIN_OUTPUT_TOKENS));
        if (limits.maxTokens !== undefined) {
          expect(call.inputTokens + plan.maxTokens).toBeLessThanOrEqual(limits.maxTokens - used.tokens);
        }
        if (limits.maxCostUsd !== undefined) {
          const worst = (call.inputTokens * call.price.input + plan.maxTokens * call.price.output) / 1e6;
          expect(worst).toBeLessThanOrEqual(limits.maxCostUsd - used.costUsd + EPS);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test('a refused call names the budget that binds, and that budget really cannot pay for the floor', () => {
    fc.assert(
      fc.property(limitsArb, useArb, callArb, (limits, used, call) => {
        const plan = planCall(limits, used, call);
        fc.pre(!plan.ok);
        if (plan.ok) return;
        const floor = Math.min(call.requested, MIN_OUTPUT_TOKENS);
        const tokensLeft = limits.maxTokens === undefined ? Infinity : limits.maxTokens - used.tokens;
        if (plan.stop === 'tokens') {
          expect(limits.maxTokens).toBeDefined();
          expect(call.inputTokens + floor).toBeGreaterThan(tokensLeft);
          expect(plan.needed).toBe(call.inputTokens + floor);
          expect(plan.left).toBe(Math.max(0, tokensLeft));
        } else {
          expect(plan.stop).toBe('cost');
          expect(limits.maxCostUsd).toBeDefined();
          // tokens are checked first: they could pay for the floor
          expect(call.inputTokens + floor).toBeLessThanOrEqual(tokensLeft);
          const floorCost = (call.inputTokens * call.price.input + floor * call.price.output) / 1e6;
          expect(floorCost).toBeGreaterThan(limits.maxCostUsd! - used.costUsd - EPS);
          expect(plan.needed).toBeGreaterThanOrEqual(plan.left);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test('without token or cost limits every call is allowed with the requested max_tokens', () => {
    fc.assert(
      fc.property(limitsArb, useArb, callArb, (limits, used, call) => {
        const plan = planCall({ ...limits, maxTokens: undefined, maxCostUsd: undefined }, used, call);
        expect(plan).toEqual({ ok: true, maxTokens: call.requested });
      }),
    );
  });
});

describe('attemptStop and spentStop properties', () => {
  test('using more of any budget never turns a stop back into null', () => {
    const moreArb = fc.record({
      attempts: fc.nat(5),
      wallTimeMs: fc.nat(100_000),
      tokens: fc.nat(100_000),
      costUsd: dollars(5),
    });
    fc.assert(
      fc.property(limitsArb, useArb, moreArb, (limits, used, more) => {
        const after: BudgetUse = {
          ...used,
          attempts: used.attempts + more.attempts,
          wallTimeMs: used.wallTimeMs + more.wallTimeMs,
          tokens: used.tokens + more.tokens,
          costUsd: used.costUsd + more.costUsd,
        };
        if (attemptStop(limits, used) !== null) expect(attemptStop(limits, after)).not.toBeNull();
        if (spentStop(limits, used) !== null) expect(spentStop(limits, after)).not.toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  test('attemptStop is attempts whenever the attempts are used up, and spentStop otherwise', () => {
    fc.assert(
      fc.property(limitsArb, useArb, (limits, used) => {
        const stop = attemptStop(limits, used);
        if (used.attempts >= limits.maxAttempts) expect(stop).toBe('attempts');
        else expect(stop).toBe(spentStop(limits, used));
      }),
    );
  });
});

describe('extendLimits properties', () => {
  test('extending a spent budget by more than it overshot makes that budget unspent again', () => {
    const spentArb = fc.record({
      which: fc.constantFrom('tokens' as const, 'time' as const, 'cost' as const),
      limit: fc.integer({ min: 1, max: 1_000_000 }),
      over: fc.integer({ min: 0, max: 10_000 }),
      extra: fc.integer({ min: 1, max: 1_000_000 }),
    });
    fc.assert(
      fc.property(spentArb, ({ which, limit, over, extra }) => {
        // tokens and milliseconds as integers, dollars as whole micro-dollars
        const unit = which === 'cost' ? 1e-6 : 1;
        const limits: BudgetLimits = { maxAttempts: 10, [LIMIT[which]]: limit * unit };
        const used: BudgetUse = {
          attempts: 0,
          wallTimeMs: 0,
          tokens: 0,
          costUsd: 0,
          sideEffects: 0,
          [USE[which]]: (limit + over) * unit,
        };
        expect(spentStop(limits, used)).toBe(which);
        const extended = extendLimits(limits, { [EXT[which]]: (over + extra) * unit });
        expect(spentStop(extended, used)).toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  test('each given amount is added to its defined limit and the others are unchanged', () => {
    const definedLimits = fc.record({
      maxAttempts: fc.integer({ min: 1, max: 20 }),
      maxWallTimeMs: fc.integer({ min: 1, max: 3_600_000 }),
      maxTokens: fc.integer({ min: 1, max: 2_000_000 }),
      maxCostUsd: dollars(50),
      maxSideEffects: optional(fc.integer({ min: 0, max: 10 })),
    });
    const extArb = fc.record(
      {
        attempts: fc.integer({ min: 1, max: 100 }),
        tokens: fc.integer({ min: 1, max: 1e6 }),
        wallTimeMs: fc.integer({ min: 1, max: 1e7 }),
        costUsd: dollars(100),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(definedLimits, extArb, (limits, ext) => {
        const out = extendLimits(limits, ext);
        expect(out.maxAttempts).toBe(limits.maxAttempts + (ext.attempts ?? 0));
        expect(out.maxTokens).toBe(limits.maxTokens + (ext.tokens ?? 0));
        expect(out.maxWallTimeMs).toBe(limits.maxWallTimeMs + (ext.wallTimeMs ?? 0));
        expect(out.maxCostUsd).toBeCloseTo(limits.maxCostUsd + (ext.costUsd ?? 0), 6);
        expect(out.maxSideEffects).toBe(limits.maxSideEffects);
      }),
    );
  });
});
