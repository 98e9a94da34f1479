import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { Autonomy, LoopSpec } from '../common/loop-spec';
import { zodIssues } from '../common/format';
import {
  canonicalJson,
  DECISION_NAMESPACE,
  GRANT_NAMESPACE,
  parseAllowedSigners,
  stillAllows,
  verifySignature,
} from '../common/sshsig';
import {
  atLeast,
  grantMessage,
  levelNeedingGrant,
  SignedGrantSchema,
  type AutonomyGrant,
  type Trust,
} from '../common/trust';
import { BUILT_IN_LOOPS } from '../loops';
import { loopwrightHome } from '../server/paths';
import { FailureType } from '../common/failure-types';

/**
 * Where a worker finds what it trusts (files its operator controls; the sandbox never mounts
 * them): `allowedSigners`, git's allowed_signers file of the people whose signed decisions
 * and grants count, and `grantsDir`, the operators' signed autonomy grants.
 */
export interface TrustPaths {
  /** null: none. */
  allowedSigners: string | null;
  /** True when the path was configured (LOOPWRIGHT_ALLOWED_SIGNERS), so a missing file is an error. */
  explicit: boolean;
  grantsDir: string;
}

/** The most an allowed-signers file may weigh (it is pinned into every run's history). */
const MAX_ALLOWED_SIGNERS_BYTES = 64 * 1024;

/**
 * LOOPWRIGHT_ALLOWED_SIGNERS (a file; set it empty for none), else `<LOOPWRIGHT_HOME>/allowed_signers`
 * when it exists; LOOPWRIGHT_GRANTS, else `<LOOPWRIGHT_HOME>/grants`.
 */
export function trustPathsFromEnv(env: Record<string, string | undefined>): TrustPaths {
  const home = loopwrightHome(env as NodeJS.ProcessEnv);
  const named = env.LOOPWRIGHT_ALLOWED_SIGNERS;
  const fallback = path.join(home, 'allowed_signers');
  return {
    allowedSigners: named !== undefined ? named.trim() || null : existsSync(fallback) ? fallback : null,
    explicit: named !== undefined && named.trim() !== '',
    grantsDir: env.LOOPWRIGHT_GRANTS?.trim() || path.join(home, 'grants'),
  };
}

export interface LoadTrustInput {
  loop: string;
  autonomy: Autonomy;
  /** True when the run's delivery has git_commit effects. */
  commits: boolean;
  /**
   * The run's spec and the user's input it was planned from (sent by runs that ask for L3): a
   * grant is for a loop as its definition plans it, so the worker plans the input again and the
   * spec must match it where it decides what lands (checks, effects, tools, commands, sandbox).
   */
  planned?: { spec: LoopSpec; input: unknown };
}

/** Reads the worker's trust for a run as it starts (see common/trust.ts). A configured file that cannot be read fails the run's set-up. */
export function loadTrust(paths: () => TrustPaths, input: LoadTrustInput): Trust {
  const p = paths();
  const allowedSigners = readAllowedSigners(p);
  const definition = BUILT_IN_LOOPS.get(input.loop);
  const signedDecisions =
    definition?.requireSignedDecisions === true
      ? 'all'
      : definition?.requireSignedDecisions === false
        ? 'none'
        : 'effects';
  return {
    allowedSigners,
    signedDecisions,
    reviewsGateEffects: input.autonomy === 'L3' && input.commits,
    recheckSigners: true,
    decisionsForRun: true,
    signedChanges: true,
    autonomy: grantFor(input, definition?.ungrantedAutonomy ?? 'L2', allowedSigners?.text ?? null, p.grantsDir),
  };
}

/** The allowed signers file as the worker has it now (null: none); a configured file that cannot be used throws. */
export function readAllowedSigners(p: TrustPaths): Trust['allowedSigners'] {
  if (!p.allowedSigners) return null;
  const file = path.resolve(p.allowedSigners);
  if (!existsSync(file)) {
    if (!p.explicit) return null;
    throw ApplicationFailure.nonRetryable(
      `LOOPWRIGHT_ALLOWED_SIGNERS names ${file}, which does not exist: create it (git's allowed_signers format) or set the variable empty for none`,
      FailureType.Trust,
    );
  }
  if (statSync(file).size > MAX_ALLOWED_SIGNERS_BYTES)
    throw ApplicationFailure.nonRetryable(
      `the allowed signers file ${file} is over ${MAX_ALLOWED_SIGNERS_BYTES / 1024} KB: keep one line per person`,
      FailureType.Trust,
    );
  const text = readFileSync(file, 'utf8');
  return {
    path: file,
    sha256: createHash('sha256').update(text).digest('hex'),
    text,
    keys: parseAllowedSigners(text).entries.length,
  };
}

/**
 * Whether a run may use its autonomy: the loop's own allowance, else a grant file in
 * `grantsDir` signed by a key the allowed signers let sign grants for its `by`.
 */
function grantFor(
  input: LoadTrustInput,
  ungranted: 'L1' | 'L2',
  allowedText: string | null,
  grantsDir: string,
): AutonomyGrant {
  const needed = levelNeedingGrant(input.autonomy, input.commits, ungranted);
  if (!needed) return { granted: true, level: input.autonomy, via: 'loop' };
  const unlike = input.planned ? specUnlikePlan(input.loop, input.planned) : null;
  if (unlike)
    return {
      granted: false,
      level: input.autonomy,
      reason: `loop ${input.loop} is not granted ${needed} for this run: its spec is not what the loop's definition makes of its input (${unlike}); start it with the client (loopwright run)`,
    };
  const how = `an operator grants it with \`loopwright grant ${input.loop} --level ${needed} --by NAME\` once \`loopwright autonomy ${input.loop}\` shows its promotion rule met`;
  if (!allowedText)
    return {
      granted: false,
      level: input.autonomy,
      reason: `loop ${input.loop} is not granted ${needed}: grants are signed, and this worker has no allowed signers (LOOPWRIGHT_ALLOWED_SIGNERS); then ${how}`,
    };
  const allowed = parseAllowedSigners(allowedText);
  const problems: string[] = [];
  const files = existsSync(grantsDir)
    ? readdirSync(grantsDir)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];
  for (const name of files) {
    const file = path.join(grantsDir, name);
    let parsed;
    try {
      parsed = SignedGrantSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      continue;
    }
    if (!parsed.success) {
      problems.push(`${name}: ${zodIssues(parsed.error).join('; ')}`);
      continue;
    }
    const { grant, signature } = parsed.data;
    if (grant.loop !== input.loop || !atLeast(grant.level, needed)) continue;
    const v = verifySignature({
      armored: signature,
      message: grantMessage(grant),
      namespace: GRANT_NAMESPACE,
      principal: grant.by,
      allowed,
      now: Date.now(),
    });
    if (!v.ok) {
      problems.push(`${name}: ${v.reason}`);
      continue;
    }
    return {
      granted: true,
      level: input.autonomy,
      via: 'grant',
      by: grant.by,
      fingerprint: v.fingerprint,
      at: grant.at,
      file,
    };
  }
  const seen = problems.length ? ` (grant files refused: ${problems.join('; ')})` : '';
  return {
    granted: false,
    level: input.autonomy,
    reason: `loop ${input.loop} is not granted ${needed} on this worker (no valid grant in ${grantsDir})${seen}: ${how}`,
  };
}

/** A verified decision's signer, to check against the worker's allowed signers as they are now. */
export interface CheckSignerInput {
  principal: string;
  fingerprint: string;
}

/**
 * Whether the worker's allowed signers, read now, still let `fingerprint` sign decisions as
 * `principal` (a revocation after the run pinned its list); the reason, one line, when not.
 */
export function checkSigner(
  paths: () => TrustPaths,
  input: CheckSignerInput,
): { ok: true } | { ok: false; reason: string } {
  let current: Trust['allowedSigners'];
  try {
    current = readAllowedSigners(paths());
  } catch (err) {
    return { ok: false, reason: `the worker's allowed signers cannot be read now: ${(err as Error).message}` };
  }
  if (!current)
    return {
      ok: false,
      reason: `key ${input.fingerprint} is no longer allowed: the worker has no allowed signers now`,
    };
  if (
    !stillAllows(parseAllowedSigners(current.text), input.fingerprint, input.principal, DECISION_NAMESPACE, Date.now())
  )
    return {
      ok: false,
      reason: `key ${input.fingerprint} may no longer sign as "${input.principal}": the worker's allowed signers (${current.path}) no longer list it (revoked after this run started)`,
    };
  return { ok: true };
}

/**
 * Where a run's spec differs from what its loop's definition (on this worker) makes of the run's
 * input, in what decides what lands and who decides; null when it does not. The prompt and tool descriptions
 * (the harness version), models and budgets may differ.
 */
export function specUnlikePlan(loop: string, planned: { spec: LoopSpec; input: unknown }): string | null {
  const definition = BUILT_IN_LOOPS.get(loop);
  if (!definition) return `no loop ${loop} on this worker`;
  const parsed = definition.inputSchema.safeParse(planned.input);
  if (!parsed.success) return `its input does not parse: ${zodIssues(parsed.error).join('; ')}`;
  let plan: LoopSpec;
  try {
    plan = definition.plan(parsed.data, { models: planned.spec.models, harness: definition.harness }).spec;
  } catch (err) {
    return `its input cannot be planned: ${(err as Error).message}`;
  }
  const gate = (s: LoopSpec) => ({
    checks: s.checks,
    effects: s.delivery?.effects ?? [],
    tools: s.agent.tools,
    commands: s.agent.commandAllowList ?? null,
    sandbox: s.sandbox ?? null,
    autonomy: s.autonomy,
    auditSample: s.auditSample ?? null,
    // Who may decide its waits and audits: a raw start must not name others than the plan does.
    approvers: s.escalation?.approvers ?? [],
  });
  const want = gate(plan);
  const got = gate(planned.spec);
  const differ = (Object.keys(want) as Array<keyof typeof want>).filter(
    (k) => canonicalJson(want[k]) !== canonicalJson(got[k]),
  );
  return differ.length ? `${differ.join(', ')} differ` : null;
}

/** What a worker says at start about whose decisions it can verify. */
export function trustNotice(paths: TrustPaths): string {
  if (!paths.allowedSigners)
    return 'decisions: no allowed signers (LOOPWRIGHT_ALLOWED_SIGNERS): every decision is recorded as unverified, and L3 cannot be granted';
  if (!existsSync(paths.allowedSigners))
    return `decisions: LOOPWRIGHT_ALLOWED_SIGNERS names ${paths.allowedSigners}, which does not exist: runs will be blocked at start until it does`;
  const parsed = parseAllowedSigners(readFileSync(paths.allowedSigners, 'utf8'));
  const skipped = parsed.skipped.length
    ? `; ${parsed.skipped.length} line(s) skipped: ${parsed.skipped.map((x) => `line ${x.line}: ${x.reason}`).join('; ')}`
    : '';
  return `decisions: verified against ${paths.allowedSigners} (${parsed.entries.length} key(s)); approvals of effects, budget extensions, retries, overrides and audits must be signed; grants are read from ${paths.grantsDir}${skipped}`;
}
