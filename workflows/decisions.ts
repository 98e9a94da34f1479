import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  decisionMessage,
  MAX_DECISION_BYTES,
  UNPRINTABLE,
  type AppliedDecision,
  type Decision,
  type DecisionRecord,
  type RefusedDecision,
} from '../common/decision';
import { checkDecision } from '../common/decision-check';
import type { RunRecord } from '../common/run-record';
import {
  DECISION_NAMESPACE,
  parseAllowedSigners,
  verifySignature,
  type AllowedSigners,
  type Verified,
} from '../common/sshsig';
import type { Trust } from '../common/trust';
import { localActs, LOCAL_READ } from './activity-proxies';
import { decisionSignal, decisionUpdate } from './messages';

/** Refused decisions a record keeps (the newest); older refusals are dropped, so no sender can grow it without bound. */
export const MAX_REFUSED = 50;

/** What a run needs to judge a decision now: whether it is its turn, who may make it, and whether it lets effects happen. */
export interface DecisionContext {
  /** Why the run would refuse this decision now (out of turn, nothing to approve), or null. */
  refusal(d: Decision): string | null | undefined;
  /** Who may make it; empty: anyone the signature rules allow. */
  approvers(d: Decision): string[];
  /** True when taking it lets the run apply effects (an approval of effects): signed by default. */
  effects(d: Decision): boolean;
  /** The wait the run is in, as signatures name it (see decisionWait); absent or null: none. */
  wait?(): string | null;
  /**
   * What taking it changes beyond stopping work (a budget extension, a retry, an override, an
   * audit: see {@link signedChangeOf}), said as the refusal names it, or null. Such a decision must be
   * signed where there are allowed signers, in runs whose trust says `signedChanges`.
   */
  change?(d: Decision): string | null;
}

export type Judged =
  { ok: true; entry: AppliedDecision } | { ok: false; reason: string; summary: RefusedDecision; duplicate: boolean };

/**
 * The gate every decision passes, whether it comes as the `decide` update (its validator and
 * handler) or the `decision` signal. Pure and deterministic: the signature is checked here, in
 * workflow code, against the allowed signers the run pinned when it started (`trust`), never a
 * list from its input. In order: size, shape, a repeated id, the signature (required for
 * approvals of effects, or for every decision when the loop says so, whenever the worker has an
 * allowed-signers list), the approvers, and whether it is the decision's turn.
 */
export class DecisionGate {
  private allowed: AllowedSigners | null | undefined;
  private readonly verified = new Map<string, Verified>();

  /**
   * `firstRunId`: the run this gate judges for (the first run id of its chain: continuing as new
   * and resets keep it, so the decisions a reset run replays verify as they did). A run whose
   * trust says `decisionsForRun` takes only signatures over it; without one, only v1 ones verify.
   */
  constructor(
    private readonly workflowId: string,
    private readonly trust: () => Trust | null | undefined,
    private readonly firstRunId?: string,
  ) {}

  /** `raw` refused for `reason` (its bounded summary), as `judge` refuses. */
  refusal(raw: unknown, reason: string, now: number): Judged {
    return {
      ok: false,
      reason,
      duplicate: false,
      summary: summarize(asObject(raw), reason, new Date(now).toISOString(), sizeOf(raw)),
    };
  }

  judge(decisions: DecisionRecord[], raw: unknown, ctx: DecisionContext, now: number): Judged {
    const at = new Date(now).toISOString();
    const bytes = sizeOf(raw);
    const refuse = (
      reason: string,
      d?: Partial<Record<string, unknown>>,
      duplicate = false,
      fingerprint?: string,
    ): Judged => ({
      ok: false,
      reason,
      duplicate,
      summary: summarize(d ?? asObject(raw), reason, at, bytes, fingerprint),
    });
    if (bytes > MAX_DECISION_BYTES)
      return refuse(`the decision is ${bytes} bytes: at most ${MAX_DECISION_BYTES} are taken (keep notes short)`);
    const parsed = checkDecision(raw);
    if (!parsed.ok) return refuse(`malformed decision: ${parsed.issues.join('; ')}`);
    const decision = parsed.decision;
    if (decisions.some((d) => d.id === decision.id))
      return refuse(`decision ${decision.id} was already received`, decision, true);

    const trust = this.trust();
    const allowed = this.signers(trust);
    const effects = trust?.signedDecisions === 'effects' && allowed !== null;
    // Since `signedChanges`: a decision that spends more, runs work again, overrides failed checks
    // or closes an audit is signed too (a sender without a key could otherwise raise the budget).
    const change = effects && trust?.signedChanges === true ? (ctx.change?.(decision) ?? null) : null;
    const mustSign = trust?.signedDecisions === 'all' || (effects && (ctx.effects(decision) || change !== null));
    let verified = false;
    let fingerprint: string | undefined;
    // Without an allowed-signers list a signature proves nothing here: the decision is unverified.
    if (decision.signature !== undefined && allowed) {
      const v = this.verifyForRun(decision, allowed, now, trust?.decisionsForRun === true, ctx.wait?.() ?? null);
      if (!v.ok) return refuse(`bad signature: ${v.reason}`, decision);
      verified = true;
      fingerprint = v.fingerprint;
    } else if (mustSign) {
      const what =
        trust?.signedDecisions === 'all'
          ? 'every decision'
          : ctx.effects(decision)
            ? 'an approval of effects'
            : change!;
      return refuse(
        allowed
          ? `${what} must be signed: sign it with your SSH key (LOOPWRIGHT_SIGNING_KEY or git's user.signingkey) listed in the worker's allowed signers`
          : `${what} must be signed, but the worker has no allowed signers (LOOPWRIGHT_ALLOWED_SIGNERS): configure them, then sign`,
        decision,
      );
    }
    // A refusal of a signed decision keeps its key: such a refusal is never dropped from the
    // record, so the same signed decision (its id) cannot be sent again once it is forgotten.
    const approvers = ctx.approvers(decision);
    if (approvers.length && !approvers.includes(decision.by)) {
      return refuse(
        `${decision.by}${verified ? '' : ' (unverified)'} may not make this decision: it is for ${approvers.join(', ')}`,
        decision,
        false,
        fingerprint,
      );
    }
    const why = ctx.refusal(decision);
    if (why) return refuse(why, decision, false, fingerprint);
    const { signature: _signature, ...kept } = decision;
    return {
      ok: true,
      entry: { ...(kept as Decision), status: 'applied', at, verified, ...(fingerprint ? { fingerprint } : {}) },
    };
  }

  /**
   * The signature checked over this run and its wait now (v2); in a run pinned before
   * `decisionsForRun` (`bound` false), a v1 signature (the workflow id alone, what its clients
   * made) is taken too.
   */
  private verifyForRun(
    decision: Decision,
    allowed: AllowedSigners,
    now: number,
    bound: boolean,
    wait: string | null,
  ): Verified {
    const v2 =
      this.firstRunId === undefined
        ? undefined
        : this.verify(decision, allowed, now, { firstRunId: this.firstRunId, wait });
    if (v2?.ok) return v2;
    return bound && v2 ? v2 : this.verify(decision, allowed, now);
  }

  /**
   * Checks a decision's signature, once: an update's validator and its handler judge the same
   * decision in one activation, and a verification costs milliseconds, so the last few results
   * are kept (keyed by everything the result depends on).
   */
  private verify(
    decision: Decision,
    allowed: AllowedSigners,
    now: number,
    run?: { firstRunId: string; wait: string | null },
  ): Verified {
    const message = decisionMessage(this.workflowId, decision, run);
    const key = `${decision.signature}\n${message}\n${Math.floor(now / 1000)}`;
    const known = this.verified.get(key);
    if (known) return known;
    const v = verifySignature({
      armored: decision.signature!,
      message,
      namespace: DECISION_NAMESPACE,
      principal: decision.by,
      allowed,
      now,
    });
    this.verified.set(key, v);
    if (this.verified.size > 8) this.verified.delete(this.verified.keys().next().value!);
    return v;
  }

  /** The pinned allowed signers, parsed once (null when the worker has none). */
  private signers(trust: Trust | null | undefined): AllowedSigners | null {
    if (this.allowed === undefined && trust)
      this.allowed = trust.allowedSigners ? parseAllowedSigners(trust.allowedSigners.text) : null;
    return this.allowed ?? null;
  }
}

/**
 * Takes decisions through the gate, as the `decide` update (refused in its validator, so a
 * refused decision never reaches history, unless it was signed by an allowed key; answered with
 * the applied entry, or failed with the refusal) and as the
 * `decision` signal (recorded, applied or as a bounded refusal). `take` applies an accepted one.
 */
export function handleDecisions(
  workflowId: string,
  trust: () => Trust | null | undefined,
  decisions: () => DecisionRecord[],
  ctx: DecisionContext,
  take: (entry: AppliedDecision) => void,
  trustSettled: () => boolean = () => true,
): void {
  const gate = new DecisionGate(workflowId, trust, workflowInfo().firstExecutionRunId);
  const judge = (raw: unknown) => gate.judge(decisions(), raw, ctx, Date.now());
  /**
   * Until the run has pinned its trust (the first thing it does), no signature can be verified:
   * a signed decision judged then would be refused as unverified, and its id not spent for good,
   * so its bytes could decide a later wait. Such a decision waits (a condition, no command) and is
   * judged once the trust is settled (pinned, or known to be absent).
   */
  const settled = (): Promise<void> | undefined => (trustSettled() ? undefined : condition(trustSettled));
  const signedBeforeTrust = (raw: unknown): boolean => {
    if (trustSettled() || sizeOf(raw) > MAX_DECISION_BYTES) return false;
    const parsed = checkDecision(raw);
    return parsed.ok && parsed.decision.signature !== undefined;
  };
  /**
   * A judged decision after its key was checked against the worker's allowed signers as they are
   * now (runs whose trust asks for it: a key revoked since the run started no longer decides),
   * judged again, since the run may have moved on while the check ran; null: nothing to check.
   */
  const rechecked = (raw: unknown, judged: Judged): Promise<Judged> | null => {
    if (!judged.ok || !judged.entry.fingerprint || trust()?.recheckSigners !== true) return null;
    const { by, fingerprint } = judged.entry;
    return localActs.checkSigner
      .executeWithOptions({ ...LOCAL_READ, summary: 'check the signer is still allowed' }, [
        { principal: by, fingerprint },
      ])
      .then((now) => (now.ok ? judge(raw) : gate.refusal(raw, `bad signature: ${now.reason}`, Date.now())));
  };
  const record = (judged: Judged) => {
    const entry = recordJudged(decisions(), judged);
    if (entry) take(entry);
  };
  const onSignal = (raw: unknown): void | Promise<void> => {
    const judged = judge(raw);
    const checking = rechecked(raw, judged);
    if (!checking) return record(judged);
    return checking.then(record);
  };
  setHandler(decisionSignal, (raw) => settled()?.then(() => onSignal(raw)) ?? onSignal(raw));
  const apply = (judged: Judged): AppliedDecision => {
    recordJudged(decisions(), judged);
    if (!judged.ok) throw ApplicationFailure.nonRetryable(judged.reason, 'DecisionRefused');
    take(judged.entry);
    return judged.entry;
  };
  setHandler(
    decisionUpdate,
    (raw) => {
      const decide = (): AppliedDecision | Promise<AppliedDecision> => {
        const judged = judge(raw);
        // Only a refused decision whose signature verified (or that came, signed, before the
        // trust was pinned) gets here: the validator lets it in, and its refusal is recorded.
        if (!judged.ok) return apply(judged);
        const checking = rechecked(raw, judged);
        return checking ? checking.then(apply) : apply(judged);
      };
      return settled()?.then(decide) ?? decide();
    },
    {
      validator: (raw) => {
        const judged = judge(raw);
        // A refused decision never reaches history, except one signed by an allowed key: refused
        // in the validator, it would leave no trace, and its signed bytes (sent too early, to the
        // wrong wait, by the wrong approver) could decide a later wait of this run. Recorded, its
        // id is spent for good (recordJudged keeps signed refusals).
        if (!judged.ok && !judged.summary.fingerprint && !signedBeforeTrust(raw)) throw new Error(judged.reason);
      },
    },
  );
}

/**
 * Waits until every decision handler still running has answered (a signer's check in flight, a
 * second approval that came in the same workflow task), even in a canceled run. A run that closed
 * first answered that update after its own completion, a command sequence the server refuses: the
 * workflow task failed and was tried again, and a second approval of the same wait could be
 * answered as applied though the run recorded only the first (test/security/decisions.test.ts,
 * 200 runs approved at once: 201 "applied" before). No command of its own: a run with no handler
 * running closes as before.
 */
export function decisionsAnswered(): Promise<void> {
  return CancellationScope.nonCancellable(() => condition(allHandlersFinished));
}

/** Adds a judged decision to the record: the applied entry, or the refusal's bounded summary (repeated ids are not recorded again). */
export function recordJudged(decisions: DecisionRecord[], judged: Judged): AppliedDecision | undefined {
  if (judged.ok) {
    decisions.push(judged.entry);
    return judged.entry;
  }
  if (judged.duplicate) return undefined;
  // Refusals of verified signatures are kept: only their signers can make them, and forgetting one
  // would let its signed decision be sent again (see DecisionGate.judge).
  const refused = decisions.filter((d) => d.status === 'refused' && !d.fingerprint);
  const [oldest] = refused;
  if (oldest && refused.length >= MAX_REFUSED) decisions.splice(decisions.indexOf(oldest), 1);
  decisions.push(judged.summary);
  return undefined;
}

function asObject(raw: unknown): Partial<Record<string, unknown>> {
  return raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
}

function sizeOf(raw: unknown): number {
  try {
    return JSON.stringify(raw ?? null).length;
  } catch {
    return Number.MAX_SAFE_INTEGER;
  }
}

/** A printable, bounded rendering of what a refused decision claimed. */
function clip(value: unknown, max: number): string {
  if (typeof value !== 'string') return '?';
  const printable = [...value].map((ch) => (UNPRINTABLE.test(ch) ? '?' : ch)).join('');
  return printable.length > max ? `${printable.slice(0, max)}…` : printable;
}

/**
 * `fingerprint`: the key of a signature that verified, never a field of what was sent (a refusal
 * with one is kept for good, see recordJudged: a sender must not be able to claim that).
 */
function summarize(
  d: Partial<Record<string, unknown>>,
  reason: string,
  at: string,
  bytes: number,
  fingerprint?: string,
): RefusedDecision {
  return {
    kind: clip(d.kind, 20),
    id: clip(d.id, 100),
    by: clip(d.by, 100),
    status: 'refused',
    reason: clip(reason, 1000),
    at,
    bytes,
    ...(fingerprint ? { fingerprint } : {}),
  };
}

/**
 * Whether taking `decision` now lets the run apply effects: approving the L2 wait for approval of
 * its effects, or, where a review is the last human gate before them (`trust.reviewsGateEffects`:
 * L3 with git_commit effects), approving a review. Such a decision must be signed (by default).
 */
export function letsEffectsHappen(
  record: Pick<RunRecord, 'state' | 'escalation'>,
  trust: Pick<Trust, 'reviewsGateEffects'> | null | undefined,
  decision: Pick<Decision, 'kind'>,
): boolean {
  if (decision.kind !== 'approve' || record.state !== 'awaiting_human') return false;
  const kind = record.escalation?.kind;
  return kind === 'approval' || (kind === 'review' && trust?.reviewsGateEffects === true);
}

/**
 * What taking `decision` now changes in a loop run beyond stopping work, as a refusal names it,
 * or null: a budget extension (spends more), a retry (runs work again, with the sender's guidance
 * as the agent's feedback), an approval of a run a budget or an error stopped (an override: the
 * run completes with a candidate its checks did not pass) and an audit (it closes the human check
 * of applied effects, and its verdict is autonomy evidence). Where the worker has allowed signers
 * such a decision must be signed (runs pinned with `signedChanges`). A reject only stops work (or
 * sends a reviewed candidate back, within the budget, to be reviewed again), as cancelling the
 * run through Temporal would; an approval of a review lets no effect happen by itself.
 */
export function signedChangeOf(
  record: Pick<RunRecord, 'state' | 'escalation'>,
  decision: Pick<Decision, 'kind'>,
): string | null {
  switch (decision.kind) {
    case 'extend':
      return 'a budget extension';
    case 'retry':
      return 'a retry';
    case 'audit':
      return 'an audit';
    case 'approve': {
      const kind = record.state === 'awaiting_human' ? record.escalation?.kind : undefined;
      return kind === 'budget' || kind === 'error'
        ? 'an override (an approval of a candidate its checks did not pass)'
        : null;
    }
    default:
      return null;
  }
}

/**
 * Why a run would refuse `decision` now, or null when it takes it. Pure. A run takes one
 * decision per wait: approve/reject during a review; approve (an override, only when there is
 * a candidate), reject, retry or extend when a budget or an error stopped it.
 */
export function refusalReason(record: RunRecord, decision: Decision, alreadyDecided: boolean): string | null {
  if (decision.kind === 'audit') {
    if (!record.audit?.needed) return `run ${record.workflowId} does not need an audit`;
    return record.audit.reviewedBy
      ? `run ${record.workflowId} was already audited by ${record.audit.reviewedBy}`
      : null;
  }
  const esc = record.escalation;
  if (record.state !== 'awaiting_human' || !esc) return `the run is ${record.state}, not waiting for a decision`;
  if (alreadyDecided) return 'a decision was already taken for this wait';
  if (esc.kind === 'review' || esc.kind === 'approval') {
    if (decision.kind === 'approve' || decision.kind === 'reject') return null;
    return esc.kind === 'review'
      ? `the run waits for a review of attempt ${record.attempt}: approve or reject it`
      : 'the run waits for approval of its verified change: approve or reject it';
  }
  if (decision.kind === 'approve' && !record.attempts.some((a) => a.candidate !== null)) {
    return 'there is no candidate to approve: retry, extend the budget or reject';
  }
  return null;
}
