import fc from 'fast-check';
import { checkDecision } from '../../common/decision-check';
import { DecisionSchema } from '../../common/decision-schema';
import { readProposal } from '../../common/improve/proposal-shape';
import { ProposalSchema } from '../../common/improve/types';

/**
 * Workflows check decisions and proposals without zod (common/shape-check.ts says why). These
 * properties hold each check to the zod schema it mirrors: on values near the edge of valid
 * (each field valid, invalid, missing, of another type, padded with spaces, too long, with extra
 * keys), both accept or both refuse, and what they accept is the same value.
 */

/** A field's value: mostly plausible, often wrong. */
const text = (max: number) =>
  fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('', ' ', '  ada  ', 'a\nb', 'x\u200by', 'ok', 'bad', '5m', '2h', '0s', 'soon', '7d', 'approve'),
    fc.string({ minLength: max - 2, maxLength: max + 2 }),
  );
const number = fc.oneof(
  fc.integer({ min: -3, max: 130 }),
  fc.double({ min: -2, max: 200, noNaN: false }),
  fc.constantFrom(0, 1, 0.000001, 0.0000005, 1e21, Infinity, -0, Number.NaN),
);
const anything = fc.oneof(text(10), number, fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}));
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: anything }), { nil: undefined, freq: 3 });

const decisionArb = fc
  .record(
    {
      kind: fc.oneof(fc.constantFrom('approve', 'reject', 'extend', 'audit', 'retry'), anything),
      id: fc.oneof(fc.constantFrom('d-1', 'a.b:c_9', 'no spaces', ''), fc.string({ maxLength: 110 })),
      by: text(100),
      note: maybe(text(4000)),
      reason: maybe(text(4000)),
      guidance: maybe(text(4000)),
      verdict: maybe(fc.constantFrom('ok', 'bad', 'meh')),
      attempts: maybe(number),
      tokens: maybe(number),
      costUsd: maybe(number),
      wallTime: maybe(text(5)),
      signature: maybe(text(4096)),
      extra: maybe(anything),
    },
    { requiredKeys: ['kind', 'id', 'by'] },
  )
  .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)));

/** Values that are usually right and sometimes wrong, in the shape of a proposal. */
const sometimes = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: anything });
const words = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 10 }) },
  { weight: 1, arbitrary: text(10) },
);
const withExtra = <T extends object>(arb: fc.Arbitrary<T>) =>
  fc
    .tuple(arb, fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anything }))
    .map(([o, extra]) => (extra === undefined ? o : { ...o, extra }));
const proposalArb = withExtra(
  fc.record({
    changes: sometimes(
      fc.array(
        withExtra(
          fc.record({
            path: sometimes(fc.oneof(fc.constantFrom('systemPrompt', 'knowledge.x'), words)),
            value: fc.oneof(
              { weight: 6, arbitrary: fc.oneof(text(20), fc.constant(null)) },
              { weight: 1, arbitrary: anything },
            ),
          }),
        ),
        { maxLength: 3 },
      ),
    ),
    contract: sometimes(
      withExtra(
        fc.record({
          failingRuns: sometimes(fc.array(sometimes(words), { maxLength: 3 })),
          occurrences: sometimes(fc.oneof(fc.integer({ min: -1, max: 9 }), number)),
          rootCause: sometimes(words),
          expectedImprovement: sometimes(words),
          rollback: sometimes(words),
        }),
      ),
    ),
  }),
);

/** JSON, as a signal or an activity result carries it (undefined fields vanish). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');

describe("workflows' zod-free checks", () => {
  test('checkDecision accepts what DecisionSchema accepts, and returns the same decision', () => {
    let accepted = 0;
    fc.assert(
      fc.property(decisionArb, (raw) => {
        const ours = checkDecision(raw);
        const zods = DecisionSchema.safeParse(raw);
        expect(ours.ok).toBe(zods.success);
        if (ours.ok && zods.success) {
          accepted++;
          expect(asJson(ours.decision)).toEqual(asJson(zods.data));
          expect(Object.keys(ours.decision)).toEqual(
            Object.keys(zods.data).filter((k) => (zods.data as Record<string, unknown>)[k] !== undefined),
          );
        }
        if (!ours.ok) expect(ours.issues.length).toBeGreaterThan(0);
      }),
      { numRuns: 5000 },
    );
    // The generator must reach both sides, or the property says little.
    expect(accepted).toBeGreaterThan(50);
  });

  test('readProposal accepts what ProposalSchema accepts, and returns the same proposal', () => {
    let accepted = 0;
    fc.assert(
      fc.property(proposalArb, (raw) => {
        const ours = readProposal(raw);
        const zods = ProposalSchema.safeParse(raw);
        expect(ours.ok).toBe(zods.success);
        if (ours.ok && zods.success) {
          accepted++;
          expect(ours.proposal).toEqual(zods.data);
        }
      }),
      { numRuns: 5000 },
    );
    expect(accepted).toBeGreaterThan(20);
  });

  test.each([
    [
      { kind: 'approve', id: 'd1', by: '  ada  ', extra: 1 },
      { kind: 'approve', id: 'd1', by: 'ada' },
    ],
    [
      { kind: 'retry', id: 'd2', by: 'ada', guidance: ' more tests ' },
      { kind: 'retry', id: 'd2', by: 'ada', guidance: 'more tests', attempts: 1 },
    ],
  ])('a decision is normalised as the schema does: %j', (raw, expected) => {
    expect(checkDecision(raw)).toEqual({ ok: true, decision: expected });
    expect(DecisionSchema.parse(raw)).toEqual(expected);
  });

  test.each([
    [{ kind: 'extend', id: 'd3', by: 'ada' }, '(root): say what to extend: attempts, tokens, costUsd or wallTime'],
    [{ kind: 'approve', id: 'd 4', by: 'ada' }, 'id: a decision id is 1 to 100 letters, digits and ._:-'],
    [{ kind: 'approve', id: 'd5', by: 'a\nb' }, 'by: a name may not contain control characters or line breaks'],
    [{ kind: 'retry', id: 'd6', by: 'ada', guidance: '   ' }, 'guidance: retry needs guidance for the next attempt'],
    [{ kind: 'launch', id: 'd7', by: 'ada' }, 'kind: expected one of "approve"|"reject"|"extend"|"audit"|"retry"'],
  ])('a malformed decision is refused with the reason: %j', (raw, reason) => {
    const checked = checkDecision(raw);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? [] : checked.issues).toContain(reason);
  });
});
