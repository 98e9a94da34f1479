import { z } from 'zod';
import { AutonomySchema, type Autonomy } from './loop-spec';
import { canonicalJson } from './sshsig';

// What a run pinned (Trust, its record) lives in trust-record.ts, free of zod so that workflows
// may import it (see shape-check.ts); this module holds grants and their schemas.
export { trustRecord, type AutonomyGrant, type Trust, type TrustRecord } from './trust-record';

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
