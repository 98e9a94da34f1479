import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, LoopwrightError } from '../common/errors';
import { loopwrightHome } from '../server/paths';
import type { SealFormat } from './envelope';

/**
 * The operator's key ring: AES-256 keys by id, one of them current. Payloads, transcripts and
 * reports are encrypted with the current key (AES-256-GCM, a random 96-bit nonce each time)
 * and carry its id, so any key of the ring decrypts what it once encrypted: keys rotate by
 * adding a new current key and keeping the old ones.
 *
 * `LOOPWRIGHT_KEYS` names where the ring is, never the run's input (unset: `<LOOPWRIGHT_HOME>/keys`
 * when that exists, as `keys init` and the demo make it; set empty: no ring, no encryption):
 * - a file of `id=base64key` lines (`#` comments; an optional `current=id` line, else the last
 *   key is current), or
 * - a directory of `<id>.key` files holding the base64 key (an optional `current` file holding
 *   the id, else the greatest id is current).
 * Key ids are 1 to 64 letters, digits and `._-`; keys are 32 bytes.
 */
export interface KeyRing {
  /** The id new ciphertext is made with. */
  current: string;
  keys: Map<string, Buffer>;
  /** Where the ring was read from. */
  source: string;
  /**
   * The envelope new payloads are sealed in (crypto/envelope.ts): 2 unless `LOOPWRIGHT_SEAL_FORMAT=1`
   * keeps the format older versions read, while they still run beside this one.
   */
  sealFormat?: SealFormat;
}

const ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The ring `LOOPWRIGHT_KEYS` names, else (unset) `<LOOPWRIGHT_HOME>/keys` when it exists; undefined
 * when it is set empty or there is none (no encryption). A bad ring, or a bad
 * `LOOPWRIGHT_SEAL_FORMAT`, is a ConfigError.
 */
export function keyRingFromEnv(env: Record<string, string | undefined>): KeyRing | undefined {
  const sealFormat = sealFormatFromEnv(env);
  const where = env.LOOPWRIGHT_KEYS === undefined ? defaultRing(env) : env.LOOPWRIGHT_KEYS.trim();
  if (!where) return undefined;
  if (!existsSync(where))
    throw new ConfigError(
      `LOOPWRIGHT_KEYS names ${where}, which does not exist: create it with \`loopwright keys init\`, or unset it`,
    );
  const ring = statSync(where).isDirectory() ? readDir(where) : parseKeyFile(readFileSync(where, 'utf8'), where);
  return { ...ring, sealFormat };
}

/** LOOPWRIGHT_SEAL_FORMAT: unset or empty is 2; 1 or 2; anything else is a ConfigError (exit 2). */
export function sealFormatFromEnv(env: Record<string, string | undefined>): SealFormat {
  const value = env.LOOPWRIGHT_SEAL_FORMAT?.trim() ?? '';
  if (value === '' || value === '2') return 2;
  if (value === '1') return 1;
  throw new ConfigError(
    `LOOPWRIGHT_SEAL_FORMAT is ${JSON.stringify(value)}: set 1 while processes of a Loopwright version before sealed format 2 still run, else leave it unset (2)`,
  );
}

/** `<LOOPWRIGHT_HOME>/keys` when it exists. */
function defaultRing(env: Record<string, string | undefined>): string | undefined {
  const file = path.join(loopwrightHome(env), 'keys');
  return existsSync(file) ? file : undefined;
}

/** Parses a key file (`id=base64key` lines, optional `current=id`). */
export function parseKeyFile(text: string, source: string): KeyRing {
  const keys = new Map<string, Buffer>();
  let current: string | undefined;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    if (eq < 0) throw new ConfigError(`${source}:${i + 1}: expected id=base64key`);
    const id = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if (id === 'current') {
      current = value;
      return;
    }
    keys.set(checkId(id, `${source}:${i + 1}`), decodeKey(value, `${source}:${i + 1}`));
  });
  return ring(keys, current ?? [...keys.keys()].at(-1), source);
}

function readDir(dir: string): KeyRing {
  const keys = new Map<string, Buffer>();
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.key'))
    .sort()) {
    const id = checkId(name.slice(0, -4), path.join(dir, name));
    keys.set(id, decodeKey(readFileSync(path.join(dir, name), 'utf8').trim(), path.join(dir, name)));
  }
  const marker = path.join(dir, 'current');
  return ring(keys, existsSync(marker) ? readFileSync(marker, 'utf8').trim() : [...keys.keys()].sort().at(-1), dir);
}

function ring(keys: Map<string, Buffer>, current: string | undefined, source: string): KeyRing {
  if (!keys.size) throw new ConfigError(`${source} holds no keys: add one with \`loopwright keys rotate\``);
  if (!current || !keys.has(current))
    throw new ConfigError(
      `${source}: the current key ${current ?? '(none)'} is not in the ring: name one of ${[...keys.keys()].join(', ')}`,
    );
  return { current, keys, source };
}

function checkId(id: string, where: string): string {
  if (!ID.test(id)) throw new ConfigError(`${where}: key id "${id}" must be 1 to 64 letters, digits and ._-`);
  return id;
}

function decodeKey(b64: string, where: string): Buffer {
  const key = Buffer.from(b64, 'base64');
  if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== b64.replace(/=+$/, ''))
    throw new ConfigError(
      `${where}: a key is 32 bytes in base64 (44 characters); make one with \`loopwright keys rotate\``,
    );
  return key;
}

/** A new random key, as the base64 a key file holds. */
export function newKey(): string {
  return randomBytes(32).toString('base64');
}

/** A new key id: `k` and the UTC time, e.g. `k20261201T235900Z`. */
export function newKeyId(now = new Date()): string {
  return `k${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
}

/** AES-256-GCM of `plain` with the ring's current key: `nonce (12) | ciphertext | tag (16)`, and the key id. */
export function seal(ring: KeyRing, plain: Uint8Array, aad?: Uint8Array): { keyId: string; sealed: Buffer } {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', ring.keys.get(ring.current)!, nonce);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return { keyId: ring.current, sealed: Buffer.concat([nonce, body, cipher.getAuthTag()]) };
}

/** The plaintext of `sealed` (see {@link seal}); a missing key or a tampered ciphertext throws a clear error. */
export function open(ring: KeyRing, keyId: string, sealed: Uint8Array, aad?: Uint8Array): Buffer {
  const key = ring.keys.get(keyId);
  if (!key) throw new KeyMissingError(keyId, ring.source);
  const buf = Buffer.from(sealed);
  if (buf.length < 28) throw new CiphertextError(`ciphertext under key ${keyId} is truncated`);
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(buf.subarray(buf.length - 16));
  try {
    return Buffer.concat([decipher.update(buf.subarray(12, buf.length - 16)), decipher.final()]);
  } catch {
    throw new CiphertextError(
      `ciphertext under key ${keyId} does not authenticate: it was altered, or the key ${keyId} in ${ring.source} is not the one it was made with`,
    );
  }
}

/** Ciphertext whose key is not in the ring (lost, or never given to this process). */
/** Where the ring comes from when a process has none, for {@link KeyMissingError}'s message. */
export const NO_RING = '(none: LOOPWRIGHT_KEYS is not set in this process)';

export class KeyMissingError extends ConfigError {
  constructor(
    readonly keyId: string,
    source: string,
  ) {
    super(
      source === NO_RING
        ? `key ${keyId} is not in the key ring ${source}: this data was encrypted with it; set LOOPWRIGHT_KEYS to the key ring the workers use (see README "Secrets at rest")`
        : `key ${keyId} is not in the key ring ${source}: this data was encrypted with it; restore the key from your backup (see README "Secrets at rest")`,
    );
  }
}

/** Ciphertext that does not decrypt with the key it names: altered, truncated, or a different key under the same id. */
export class CiphertextError extends LoopwrightError {}
