import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateSigningKey, signMessage } from '../../client/signing';
import { DECISION_NAMESPACE, GRANT_NAMESPACE } from '../../common/sshsig';
import { grantMessage, type Grant } from '../../common/trust';

/** A signed L3 grant of `loop` by `by`, with the evidence `loopwright grant` records for a met L2 rule (or `evidence`). */
export function l3Grant(loop: string, by: string, evidence?: Grant['evidence']): Grant {
  return {
    loop,
    level: 'L3',
    by,
    at: '2026-12-01T00:00:00.000Z',
    evidence: evidence ?? {
      level: 'L2',
      rule: '50 consecutive L2 runs approved unchanged',
      runs: 50,
      streak: 50,
      verdict: 'meets',
    },
  };
}

/** Writes `grant` to `file` as the worker reads it, signed with the private key at `key`. */
export function writeSignedGrant(file: string, grant: Grant, key: string): void {
  writeFileSync(file, JSON.stringify({ grant, signature: signMessage(key, GRANT_NAMESPACE, grantMessage(grant)) }));
}

/**
 * A worker and client environment that trusts one operator key, for tests of L3 runs and of
 * verified evidence: an allowed-signers file that lets the key sign decisions and grants under
 * any name (`*`), signed L3 grants for `loops`, and the key as the client's signing key (so
 * every decision the test's client sends is signed and verified).
 */
export function operatorTrust(loops: string[] = []): { env: Record<string, string>; key: string; dir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-operator-'));
  const key = path.join(dir, 'operator_ed25519');
  const { publicKey } = generateSigningKey(key, 'test operator');
  const allowed = path.join(dir, 'allowed_signers');
  writeFileSync(allowed, `"*" namespaces="${DECISION_NAMESPACE},${GRANT_NAMESPACE}" ${publicKey}\n`);
  const grants = path.join(dir, 'grants');
  mkdirSync(grants);
  for (const loop of loops) {
    const grant = {
      ...l3Grant(loop, 'operator', { level: 'L2', rule: 'granted for a test', runs: 0, streak: 0, verdict: 'test' }),
      at: new Date().toISOString(),
    };
    writeSignedGrant(path.join(grants, `${loop}-L3.json`), grant, key);
  }
  return {
    env: { LOOPWRIGHT_ALLOWED_SIGNERS: allowed, LOOPWRIGHT_GRANTS: grants, LOOPWRIGHT_SIGNING_KEY: key },
    key,
    dir,
  };
}
