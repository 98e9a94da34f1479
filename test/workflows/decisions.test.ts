import type { Decision } from '../../common/decision';
import { unitLoopInput } from '../helpers/loop-input';
import type { Escalation, RunRecord, RunState } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { refusalReason } from '../../workflows/decisions';
import { newRecord, recordAttempt } from '../../workflows/loop/record-keeping';

const NOW = '2025-01-02T03:04:05.000Z';
const input = unitLoopInput();

const approve: Decision = { kind: 'approve', id: 'd1', by: 'ana' };
const reject: Decision = { kind: 'reject', id: 'd2', by: 'ana', reason: 'no' };
const retry: Decision = { kind: 'retry', id: 'd3', by: 'ana', guidance: 'shorter lines', attempts: 1 };
const extend: Decision = { kind: 'extend', id: 'd4', by: 'ana', attempts: 2 };
const ALL = [approve, reject, retry, extend];

/** A run in `state`, escalated for `kind`, whose attempts produced these candidates. */
function run(
  opts: { state?: RunState; kind?: Escalation['kind'] | null; candidates?: Array<string | null> } = {},
): RunRecord {
  const record = newRecord('evaluate-optimize/run-1', input, NOW);
  record.state = opts.state ?? 'awaiting_human';
  const candidates = opts.candidates ?? ['a haiku'];
  candidates.forEach((candidate, i) =>
    recordAttempt(record, { n: i + 1, candidate, usage: { ...ZERO_USAGE }, verdicts: [] }),
  );
  record.attempt = candidates.length;
  const kind = opts.kind === undefined ? 'budget' : opts.kind;
  record.escalation =
    kind === null
      ? null
      : {
          kind,
          stopReason: kind === 'review' ? 'review_timeout' : kind === 'error' ? 'model_error' : 'attempts',
          reason: 'why',
          since: NOW,
          deadline: '2025-01-03T03:04:05.000Z',
          timedOut: false,
        };
  return record;
}

describe('refusalReason', () => {
  test.each(['running', 'verifying', 'applying', 'completed', 'budget_exhausted', 'blocked'] as const)(
    'a run that is %s refuses every decision and says its state',
    (state) => {
      for (const decision of ALL) {
        expect(refusalReason(run({ state }), decision, false)).toContain(state);
      }
    },
  );

  test('a run awaiting a human without an escalation refuses every decision', () => {
    for (const decision of ALL) expect(refusalReason(run({ kind: null }), decision, false)).not.toBeNull();
  });

  test('a run that already took a decision in this wait refuses another', () => {
    for (const decision of ALL) expect(refusalReason(run(), decision, true)).not.toBeNull();
  });

  test('a budget escalation takes extend, retry and reject', () => {
    const record = run({ kind: 'budget' });
    expect(refusalReason(record, extend, false)).toBeNull();
    expect(refusalReason(record, retry, false)).toBeNull();
    expect(refusalReason(record, reject, false)).toBeNull();
  });

  test('an error escalation takes extend, retry and reject', () => {
    const record = run({ kind: 'error' });
    for (const decision of [extend, retry, reject]) expect(refusalReason(record, decision, false)).toBeNull();
  });

  test('approve on a budget escalation is taken when some earlier attempt has a candidate, even if the last has none', () => {
    expect(refusalReason(run({ candidates: ['first draft', null] }), approve, false)).toBeNull();
  });

  test('approve with no candidate in any attempt is refused: there is nothing to approve', () => {
    expect(refusalReason(run({ candidates: [null, null] }), approve, false)).toContain('no candidate to approve');
    expect(refusalReason(run({ candidates: [] }), approve, false)).toContain('no candidate to approve');
  });

  test('without a candidate, the other decisions are still taken', () => {
    const record = run({ candidates: [null] });
    for (const decision of [reject, retry, extend]) expect(refusalReason(record, decision, false)).toBeNull();
  });

  test('during a review only approve and reject are taken', () => {
    const record = run({ kind: 'review', candidates: [] });
    record.attempt = 2;
    expect(refusalReason(record, approve, false)).toBeNull();
    expect(refusalReason(record, reject, false)).toBeNull();
    for (const decision of [retry, extend]) {
      const reason = refusalReason(record, decision, false);
      expect(reason).toContain('review of attempt 2');
      expect(reason).toContain('approve or reject');
    }
  });
});
