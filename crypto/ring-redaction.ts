import { redactionFromEnv } from '../common/redact';
import { keyRingFromEnv, type KeyRing } from './keyring';

/**
 * The ways a ring's keys could be printed: base64 as a key file holds them (padded and not),
 * url-safe base64 and hex. A key is 32 random bytes, which no credential pattern recognises and
 * which decodes to nothing readable, so redaction has to know the values themselves.
 */
export function ringSecrets(ring: KeyRing | undefined): string[] {
  if (!ring) return [];
  return [...ring.keys.values()].flatMap((key) => {
    const b64 = key.toString('base64');
    return [b64, b64.replace(/=+$/, ''), key.toString('base64url'), key.toString('hex')];
  });
}

/**
 * What a process redacts in everything it prints or writes: its variables' values and the
 * LOOPWRIGHT_REDACT names (plus `names`), see common/redact-env.ts, and the keys of its key ring:
 * `ring` when given, else the one `LOOPWRIGHT_KEYS` names (a ring that cannot be read adds
 * nothing here; whoever needs it reports why). The values never leave the process.
 */
export function processRedaction(
  env: Record<string, string | undefined>,
  names: string[] = [],
  ring: KeyRing | undefined = ringOf(env),
): { names: string[]; values: string[] } {
  const own = redactionFromEnv(env, names);
  const keys = ringSecrets(ring);
  return keys.length ? { names: own.names, values: [...own.values, ...keys] } : own;
}

function ringOf(env: Record<string, string | undefined>): KeyRing | undefined {
  try {
    return keyRingFromEnv(env);
  } catch {
    return undefined;
  }
}
