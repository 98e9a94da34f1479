import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decisionMessage, type Decision, type DecisionRecord } from '../../common/decision';
import { DecisionSchema } from '../../common/decision-schema';
import { DECISION_NAMESPACE } from '../../common/sshsig';
import type { Trust } from '../../common/trust';
import type { RunRecord } from '../../common/run-record';
import { loadTrust } from '../../activities/trust';
import { summarize } from '../../client/output';
import { ZERO_USAGE } from '../../common/usage';
import { LoopRun, type RunHost, type RunMetrics } from '../../workflows/loop/loop-run';
import { unitLoopInput } from '../helpers/loop-input';
import { generateSigningKey, signMessage } from '../../client/signing';
import {
  DecisionGate,
  letsEffectsHappen,
  MAX_REFUSED,
  recordJudged,
  signedChangeOf,
  type DecisionContext,
} from '../../workflows/decisions';

/**
 * The decision gate as an attacker who can read a run's history and send signals would try it:
 * a signed decision seen once (in a signal the run refused) is not taken later, however many
 * refusals are sent to push it out of the record; and where a person's review is the last gate
 * before effects, approving it is signed like any approval of effects.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-gate-'));
const aliceKey = path.join(dir, 'alice');
const alice = generateSigningKey(aliceKey, 'alice');
const WF = 'fix-test/gate-1';
const trust = (extra: Partial<Trust> = {}): Trust => ({
  allowedSigners: {
    path: '/x/allowed_signers',
    sha256: '0'.repeat(64),
    text: `alice namespaces="${DECISION_NAMESPACE}" ${alice.publicKey}\n`,
    keys: 1,
  },
  signedDecisions: 'effects',
  autonomy: { granted: true, level: 'L2', via: 'loop' },
  ...extra,
});

function signed(d: Record<string, unknown>): Record<string, unknown> {
  const parsed = DecisionSchema.parse(d);
  return { ...parsed, signature: signMessage(aliceKey, DECISION_NAMESPACE, decisionMessage(WF, parsed)) };
}

function ctx(refusal: () => string | null, effects = false): DecisionContext {
  return { refusal, approvers: () => [], effects: () => effects };
}

test('a signed decision refused once (out of turn) is never taken later, even after a flood of refusals', () => {
  const gate = new DecisionGate(WF, () => trust());
  const decisions: DecisionRecord[] = [];
  let waiting = false;
  const turn = ctx(() => (waiting ? null : 'the run is running, not waiting for a decision'));
  const approval = signed({ kind: 'approve', id: 'early-1', by: 'alice', note: 'for attempt 1' });
  const first = gate.judge(decisions, approval, turn, 1_000);
  expect(first).toMatchObject({ ok: false, reason: /not waiting/ });
  recordJudged(decisions, first);
  expect(decisions[0]).toMatchObject({ status: 'refused', id: 'early-1', fingerprint: alice.fingerprint });
  // Anyone can send refusals: more than the record keeps.
  for (let i = 0; i < MAX_REFUSED + 10; i++)
    recordJudged(
      decisions,
      gate.judge(decisions, { kind: 'approve', id: `junk-${i}`, by: 'eve', signature: 'x' }, turn, 2_000),
    );
  expect(decisions.filter((d) => d.status === 'refused').length).toBeLessThanOrEqual(MAX_REFUSED + 1);
  // Later the run waits; the signed decision, read from the history, is sent again.
  waiting = true;
  const replayed = gate.judge(decisions, approval, turn, 3_000);
  expect(replayed).toMatchObject({ ok: false, reason: 'decision early-1 was already received', duplicate: true });
  // A fresh decision by alice is still taken.
  expect(gate.judge(decisions, signed({ kind: 'approve', id: 'now-1', by: 'alice' }), turn, 3_000)).toMatchObject({
    ok: true,
    entry: { verified: true, by: 'alice' },
  });
});

test('a refusal is kept for good only for a key that verified: a fingerprint field in what was sent counts for nothing', () => {
  const gate = new DecisionGate(WF, () => trust());
  const decisions: DecisionRecord[] = [];
  const turn = ctx(() => 'the run is running, not waiting for a decision');
  for (let i = 0; i < MAX_REFUSED + 20; i++) {
    const claimed = { kind: 'approve', id: `claim-${i}`, by: 'alice', fingerprint: alice.fingerprint };
    // Well-formed (the field is dropped) and malformed (refused before it is read).
    recordJudged(decisions, gate.judge(decisions, claimed, turn, 1_000));
    recordJudged(decisions, gate.judge(decisions, { ...claimed, kind: 'nope', id: `bad-${i}` }, turn, 1_000));
  }
  expect(decisions.length).toBeLessThanOrEqual(MAX_REFUSED);
  expect(decisions.filter((d) => 'fingerprint' in d)).toEqual([]);
});

test('a refusal of an unverified decision is still dropped past the cap (the record stays bounded)', () => {
  const gate = new DecisionGate(WF, () => trust());
  const decisions: DecisionRecord[] = [];
  const turn = ctx(() => 'not waiting');
  for (let i = 0; i < MAX_REFUSED + 20; i++)
    recordJudged(decisions, gate.judge(decisions, { kind: 'reject', id: `r-${i}`, by: 'eve' }, turn, 1_000));
  expect(decisions).toHaveLength(MAX_REFUSED);
  expect(decisions.every((d) => !('fingerprint' in d))).toBe(true);
});

describe('approving a review is an approval of effects where nothing else stands before them', () => {
  const review = (kind: 'review' | 'approval' | 'budget'): Pick<RunRecord, 'state' | 'escalation'> => ({
    state: 'awaiting_human',
    escalation: {
      kind,
      stopReason: 'review_timeout',
      reason: 'r',
      since: 'x',
      deadline: 'y',
      timedOut: false,
      approvers: [],
    },
  });
  const approve: Decision = { kind: 'approve', id: 'a', by: 'alice' };
  const reject: Decision = { kind: 'reject', id: 'b', by: 'alice' };

  test('the rule', () => {
    expect(letsEffectsHappen(review('approval'), trust(), approve)).toBe(true);
    expect(letsEffectsHappen(review('approval'), trust(), reject)).toBe(false);
    expect(letsEffectsHappen(review('review'), trust(), approve)).toBe(false);
    expect(letsEffectsHappen(review('review'), trust({ reviewsGateEffects: false }), approve)).toBe(false);
    expect(letsEffectsHappen(review('review'), trust({ reviewsGateEffects: true }), approve)).toBe(true);
    expect(letsEffectsHappen(review('review'), trust({ reviewsGateEffects: true }), reject)).toBe(false);
    expect(letsEffectsHappen(review('budget'), trust({ reviewsGateEffects: true }), approve)).toBe(false);
    expect(
      letsEffectsHappen({ ...review('review'), state: 'running' }, trust({ reviewsGateEffects: true }), approve),
    ).toBe(false);
  });

  test('the worker pins it for L3 runs with git effects only', () => {
    const paths = () => ({ allowedSigners: null, explicit: false, grantsDir: path.join(dir, 'grants') });
    expect(loadTrust(paths, { loop: 'fix-test', autonomy: 'L3', commits: true }).reviewsGateEffects).toBe(true);
    expect(loadTrust(paths, { loop: 'fix-test', autonomy: 'L2', commits: true }).reviewsGateEffects).toBe(false);
    expect(loadTrust(paths, { loop: 'ci-triage', autonomy: 'L3', commits: false }).reviewsGateEffects).toBe(false);
  });

  test('at L3 with git effects an unsigned approval of a review (claiming an approver) is refused; signed it is taken', () => {
    const t = trust({ reviewsGateEffects: true, autonomy: { granted: true, level: 'L3', via: 'loop' } });
    const gate = new DecisionGate(WF, () => t);
    const record = review('review');
    const c: DecisionContext = {
      refusal: () => null,
      approvers: () => ['alice'],
      effects: (d) => letsEffectsHappen(record, t, d),
    };
    expect(gate.judge([], { kind: 'approve', id: 'u-1', by: 'alice' }, c, 1_000)).toMatchObject({
      ok: false,
      reason: /^an approval of effects must be signed/,
    });
    // Rejecting stops effects: it may stay unsigned.
    expect(gate.judge([], { kind: 'reject', id: 'u-2', by: 'alice' }, c, 1_000)).toMatchObject({ ok: true });
    expect(gate.judge([], signed({ kind: 'approve', id: 's-1', by: 'alice' }), c, 1_000)).toMatchObject({
      ok: true,
      entry: { verified: true, fingerprint: alice.fingerprint },
    });
  });
});

test('an extension granted by an unsigned decision is shown unverified in status; a verified one is not', async () => {
  const host: RunHost = {
    now: () => 0,
    show: () => undefined,
    wait: async (ready) => ready(),
    continueAsNewSuggested: () => false,
    has: () => true,
  };
  const metrics: RunMetrics = {
    charged: () => undefined,
    verdicts: () => undefined,
    waited: () => undefined,
    ended: () => undefined,
  };
  const lines: Array<string | undefined> = [];
  for (const verified of [false, true]) {
    const run = new LoopRun(unitLoopInput({ budget: { maxAttempts: 1 } }), 'wf/x', host, metrics);
    run.recordAttempt({ n: 1, candidate: 'a', usage: { ...ZERO_USAGE }, verdicts: [] });
    run.receive({
      kind: 'extend',
      id: `e-${verified}`,
      by: 'alice',
      attempts: 2,
      status: 'applied',
      at: 'x',
      verified,
    });
    run.decide(await run.escalate('budget', 'attempts', 'spent'), 'budget', 'attempts');
    lines.push(summarize(run.record).find((l) => l.startsWith('  extended')));
  }
  expect(lines).toEqual(['  extended   +2 attempts by alice (unverified)', '  extended   +2 attempts by alice']);
});

test.each([
  ['a soft hyphen', 'al\u00adice'],
  ['a combining grapheme joiner', 'ali\u034fce'],
  ['a Hangul filler', 'alice\u3164'],
  ['a variation selector', 'alic\ufe0fe'],
  ['a no-break space', 'alice\u00a0smith'],
  ['a word joiner', 'al\u2060ice'],
])('a name with %s (shows as another name) is refused by the run and by the schema', (_what, by) => {
  const gate = new DecisionGate(WF, () => trust());
  const judged = gate.judge(
    [],
    { kind: 'approve', id: 'n-1', by },
    ctx(() => null),
    1_000,
  );
  expect(judged).toMatchObject({ ok: false, reason: /by: a name may not contain control characters/ });
  expect(DecisionSchema.safeParse({ kind: 'approve', id: 'n-1', by }).success).toBe(false);
  // The summary it leaves shows the character as '?', not as a look-alike.
  expect(!judged.ok && judged.summary.by).not.toBe(by);
});

test('a run pinned with signedChanges refuses an unsigned extension, retry, override or audit where there are allowed signers; one pinned before takes them unverified, as it did', () => {
  const budgetWait = { state: 'awaiting_human', escalation: { kind: 'budget' } } as Pick<
    RunRecord,
    'state' | 'escalation'
  >;
  const reviewWait = { state: 'awaiting_human', escalation: { kind: 'review' } } as Pick<
    RunRecord,
    'state' | 'escalation'
  >;
  const unsigned: Array<[Record<string, unknown>, Pick<RunRecord, 'state' | 'escalation'>, RegExp | null]> = [
    [{ kind: 'extend', id: 'e', by: 'alice', attempts: 5 }, budgetWait, /^a budget extension must be signed/],
    [{ kind: 'retry', id: 'r', by: 'alice', guidance: 'go on' }, budgetWait, /^a retry must be signed/],
    [{ kind: 'approve', id: 'o', by: 'alice' }, budgetWait, /^an override .* must be signed/],
    [{ kind: 'audit', id: 'a', by: 'alice', verdict: 'ok' }, budgetWait, /^an audit must be signed/],
    // Only stops work, or lets no effect happen by itself: still taken unsigned, unverified.
    [{ kind: 'reject', id: 'j', by: 'alice' }, budgetWait, null],
    [{ kind: 'approve', id: 'v', by: 'alice' }, reviewWait, null],
  ];
  for (const [d, record, reason] of unsigned) {
    const judgeWith = (t: Trust) => {
      const context: DecisionContext = { ...ctx(() => null), change: (x) => signedChangeOf(record, x) };
      return new DecisionGate(WF, () => t).judge([], d, context, 1_000);
    };
    const now = judgeWith(trust({ signedChanges: true }));
    if (reason) expect(now).toMatchObject({ ok: false, reason: expect.stringMatching(reason) });
    else expect(now).toMatchObject({ ok: true, entry: { verified: false } });
    // Pinned before signedChanges (a history being replayed): the old rule.
    expect(judgeWith(trust())).toMatchObject({ ok: true, entry: { verified: false } });
    // No allowed signers: nothing can be verified, so nothing is asked to be signed.
    expect(judgeWith(trust({ allowedSigners: null, signedChanges: true }))).toMatchObject({ ok: true });
  }
  // Signed by alice, each is taken, verified.
  const signedExtend = signed({ kind: 'extend', id: 'e2', by: 'alice', attempts: 5 });
  const context: DecisionContext = { ...ctx(() => null), change: (x) => signedChangeOf(budgetWait, x) };
  expect(
    new DecisionGate(WF, () => trust({ signedChanges: true })).judge([], signedExtend, context, 1_000),
  ).toMatchObject({
    ok: true,
    entry: { verified: true },
  });
});
