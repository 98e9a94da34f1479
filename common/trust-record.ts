import type { Autonomy } from './loop-spec';

/**
 * What a run trusts, pinned when it starts from files on the worker (never from the run's input,
 * and never from anything its agent can write): the operator's allowed signers, which decisions
 * must be signed, and the autonomy the run may use.
 */
export interface Trust {
  /** The worker's allowed-signers file (git's allowed_signers format) as the run found it; null: none configured. */
  allowedSigners: { path: string; sha256: string; text: string; keys: number } | null;
  /**
   * Which decisions must be signed when there is an allowed-signers list: `effects` (the default:
   * approvals that let effects happen), `all`, or `none`. From the loop's definition on the worker.
   */
  signedDecisions: 'effects' | 'all' | 'none';
  autonomy: AutonomyGrant;
  /**
   * True when a person's review is the last human gate before effects (L3 with git_commit
   * effects: they apply at once after the checks pass), so approving a review is an approval of
   * effects and is signed as one. Absent in runs pinned before it (they keep the old rule).
   */
  reviewsGateEffects?: boolean;
  /**
   * True when a verified decision's key is checked again against the worker's allowed signers as
   * they are when it arrives (a local activity): a key the operator removed after the run started
   * no longer decides for it; a key added since is still not trusted (the pinned list decides
   * first). Absent in runs pinned before it.
   */
  recheckSigners?: boolean;
  /**
   * True when a signed decision must cover the run it decides (its first Temporal run id:
   * `loopwright decision v2`, see decisionMessage), not only the workflow id: a decision signed for an earlier run under the
   * same id, read from its history, decides nothing in this one. Absent in runs pinned before it
   * (they take v1 signatures, and v2 ones).
   */
  decisionsForRun?: boolean;
  /**
   * True when, where there are allowed signers and `signedDecisions` is `effects`, a decision
   * that changes what the run does beyond stopping it must be signed too: a budget extension
   * (spends more), a retry (runs work again with the sender's guidance), an approval that
   * overrides failed checks (a run a budget or an error stopped), and an audit (closes the
   * human check of applied effects). A reject, and an approval of a review that lets no effect
   * happen, may still be unsigned (recorded unverified). Absent in runs pinned before it (they
   * keep the old rule: approvals of effects only).
   */
  signedChanges?: boolean;
}

/** What the record shows of the trust a run pinned (the allowed signers by path and hash). */
export type TrustRecord = Omit<Trust, 'allowedSigners'> & {
  allowedSigners: { path: string; sha256: string; keys: number } | null;
};

/**
 * Whether the run may use the autonomy it asked for: granted by the loop's definition (L1, and L2
 * where the loop allows it without a grant), by an operator's signed grant, or refused with what
 * is missing.
 */
export type AutonomyGrant =
  | { granted: true; level: Autonomy; via: 'loop' }
  | { granted: true; level: Autonomy; via: 'grant'; by: string; fingerprint: string; at: string; file: string }
  | { granted: false; level: Autonomy; reason: string };

export function trustRecord(trust: Trust): TrustRecord {
  const { allowedSigners: a, ...rest } = trust;
  return { ...rest, allowedSigners: a ? { path: a.path, sha256: a.sha256, keys: a.keys } : null };
}
