import { z } from 'zod';
import { AutonomySchema, type Autonomy } from './loop-spec';
import { canonicalJson } from './sshsig';

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
}

/** What the record shows of the trust a run pinned (the allowed signers by path and hash). */
export type TrustRecord = Omit<Trust, 'allowedSigners'> & { allowedSigners: { path: string; sha256: string; keys: number } | null };

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

/** The evidence an operator saw when granting (from `loopwright autonomy`, verified approvals only). */
export const GrantEvidenceSchema = z.object({
  level: AutonomySchema,
  rule: z.string(),
  runs: z.number().int().nonnegative(),
  streak: z.number().int().nonnegative(),
  verdict: z.string(),
});

/** An operator's grant of an autonomy level to a loop, as signed (namespace loopwright-grant). */
export const GrantSchema = z.strictObject({
  loop: z.string().min(1),
  level: z.enum(['L2', 'L3']),
  by: z.string().min(1).max(100),
  at: z.string().min(1),
  evidence: GrantEvidenceSchema,
});
export type Grant = z.infer<typeof GrantSchema>;

/** A grant file: the grant and its armored SSH signature. */
export const SignedGrantSchema = z.strictObject({ grant: GrantSchema, signature: z.string().min(1).max(4096) });
export type SignedGrant = z.infer<typeof SignedGrantSchema>;

/** The bytes a grant's signature covers. */
export function grantMessage(grant: Grant): string {
  return `loopwright grant v1\n${canonicalJson(grant)}`;
}

const RANK: Record<Autonomy, number> = { L1: 1, L2: 2, L3: 3 };

/**
 * The level a run needs a grant for, or null: L3 always; L2 when it applies git effects and the
 * loop's definition does not allow L2 without a grant.
 */
export function levelNeedingGrant(asked: Autonomy, commits: boolean, ungranted: 'L1' | 'L2'): Autonomy | null {
  const needed: Autonomy = asked === 'L2' && !commits ? 'L1' : asked;
  return RANK[needed] > RANK[ungranted] ? needed : null;
}

export function atLeast(level: Autonomy, needed: Autonomy): boolean {
  return RANK[level] >= RANK[needed];
}
