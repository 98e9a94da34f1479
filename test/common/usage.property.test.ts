import fc from 'fast-check';
import { addUsage, type Usage } from '../../common/usage';

const tokens = fc.nat({ max: 10_000_000 });
/** Costs as the pricing module produces them: whole micro-dollars. */
const usageArb: fc.Arbitrary<Usage> = fc.record({
  inputTokens: tokens,
  outputTokens: tokens,
  cacheReadTokens: tokens,
  cacheWriteTokens: tokens,
  costUsd: fc.nat({ max: 100_000_000 }).map((micro) => micro / 1e6),
});

const tokenFields = (u: Usage) => ({
  inputTokens: u.inputTokens,
  outputTokens: u.outputTokens,
  cacheReadTokens: u.cacheReadTokens,
  cacheWriteTokens: u.cacheWriteTokens,
});

describe('addUsage properties', () => {
  test('is associative on token fields: (a+b)+c equals a+(b+c)', () => {
    fc.assert(
      fc.property(usageArb, usageArb, usageArb, (a, b, c) => {
        expect(tokenFields(addUsage(addUsage(a, b), c))).toEqual(tokenFields(addUsage(a, addUsage(b, c))));
      }),
    );
  });

  test('is commutative on token fields: a+b equals b+a', () => {
    fc.assert(
      fc.property(usageArb, usageArb, (a, b) => {
        expect(tokenFields(addUsage(a, b))).toEqual(tokenFields(addUsage(b, a)));
      }),
    );
  });

  test('the total of N usages is never below any part, in any field', () => {
    fc.assert(
      fc.property(fc.array(usageArb, { minLength: 1, maxLength: 20 }), (parts) => {
        const total = addUsage(...parts);
        for (const part of parts) {
          expect(total.inputTokens).toBeGreaterThanOrEqual(part.inputTokens);
          expect(total.outputTokens).toBeGreaterThanOrEqual(part.outputTokens);
          expect(total.cacheReadTokens).toBeGreaterThanOrEqual(part.cacheReadTokens);
          expect(total.cacheWriteTokens).toBeGreaterThanOrEqual(part.cacheWriteTokens);
          expect(total.costUsd).toBeGreaterThanOrEqual(part.costUsd);
        }
      }),
    );
  });

  test('the token total of N usages equals the field-wise sum', () => {
    fc.assert(
      fc.property(fc.array(usageArb, { maxLength: 20 }), (parts) => {
        const total = addUsage(...parts);
        expect(total.inputTokens).toBe(parts.reduce((s, p) => s + p.inputTokens, 0));
        expect(total.cacheWriteTokens).toBe(parts.reduce((s, p) => s + p.cacheWriteTokens, 0));
      }),
    );
  });
});
