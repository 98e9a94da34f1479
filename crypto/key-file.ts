import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { UsageError } from '../common/errors';
import { loopwrightHome } from '../server/paths';
import { keyRingFromEnv, newKey, newKeyId, parseKeyFile, type KeyRing } from './keyring';

/** The key file `keys init` makes when LOOPWRIGHT_KEYS is unset: `<LOOPWRIGHT_HOME>/keys`. */
export function defaultKeysPath(env: Record<string, string | undefined>): string {
  return path.join(loopwrightHome(env), 'keys');
}

/** The ring the `keys` commands work on: LOOPWRIGHT_KEYS, else `<LOOPWRIGHT_HOME>/keys` (which every client and worker reads when LOOPWRIGHT_KEYS is unset). */
export function keysLocation(env: Record<string, string | undefined>): string {
  return env.LOOPWRIGHT_KEYS?.trim() || defaultKeysPath(env);
}

/** The ring at `where` (a key file or a directory); none there is a UsageError that says how to make one. */
export function readRingAt(where: string): KeyRing {
  if (!existsSync(where)) throw new UsageError(`no key ring at ${where}: create one with \`loopwright keys init\``);
  return keyRingFromEnv({ LOOPWRIGHT_KEYS: where })!;
}

/**
 * Creates a key file at `file` with one new key, current, readable by its owner only (0600;
 * its folder 0700 when made here). An existing file is never overwritten (a UsageError): the
 * keys in it may be the only way to read runs already encrypted.
 */
export function initKeyFile(file: string, now = new Date()): { file: string; keyId: string } {
  if (existsSync(file))
    throw new UsageError(
      `${file} already exists: it is kept (its keys may be the only way to read encrypted runs); add a key with \`loopwright keys rotate\``,
    );
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const keyId = newKeyId(now);
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(
      fd,
      `# Loopwright key ring: id=base64 AES-256 key; the current key encrypts, every key decrypts. Back it up; never commit it.\n${keyId}=${newKey()}\ncurrent=${keyId}\n`,
    );
  } finally {
    closeSync(fd);
  }
  chmodSync(file, 0o600);
  return { file, keyId };
}

/**
 * Adds a new key to the ring at `where` and makes it current; the old keys stay, so runs they
 * encrypted stay readable. A key file is rewritten atomically (0600); a directory gets
 * `<id>.key` and its `current` file.
 */
export function rotateRing(where: string, now = new Date()): { keyId: string; previous: string; keys: number } {
  const ring = readRingAt(where);
  let keyId = newKeyId(now);
  for (let n = 2; ring.keys.has(keyId); n++) keyId = `${newKeyId(now)}-${n}`;
  if (statSync(where).isDirectory()) {
    writeFileSync(path.join(where, `${keyId}.key`), `${newKey()}\n`, { mode: 0o600, flag: 'wx' });
    writeAtomic(path.join(where, 'current'), `${keyId}\n`);
  } else {
    const kept = readFileSync(where, 'utf8')
      .split(/\r?\n/)
      .filter((l) => !/^\s*current\s*=/.test(l))
      .join('\n')
      .replace(/\n*$/, '\n');
    const text = `${kept}${keyId}=${newKey()}\ncurrent=${keyId}\n`;
    parseKeyFile(text, where); // never write a ring that would not read back
    writeAtomic(where, text);
  }
  return { keyId, previous: ring.current, keys: ring.keys.size + 1 };
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}
