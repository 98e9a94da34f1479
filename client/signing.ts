import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../common/errors';
import {
  armorSignature,
  base64Decode,
  base64Encode,
  ed25519Blob,
  fingerprint,
  publicKeyLine,
  signedData,
  sshString,
} from '../common/sshsig';

/**
 * Signing decisions and grants with a person's SSH key, as git does for commits: the key named
 * by LOOPWRIGHT_SIGNING_KEY, else git's `user.signingkey`. An unencrypted ed25519 key is read
 * and signed with here; anything else (a passphrase, a key held by ssh-agent, a `.pub` or
 * `key::` public key) goes through `ssh-keygen -Y sign`, which OpenSSH ships.
 */

/**
 * Where the signing key is, or null when none is configured: LOOPWRIGHT_SIGNING_KEY (set it
 * empty to send unsigned decisions), else git's `user.signingkey` when git signs with SSH
 * (`gpg.format ssh`).
 */
export function signingKeyPath(env: Record<string, string | undefined>): string | null {
  const named = env.LOOPWRIGHT_SIGNING_KEY;
  if (named !== undefined) return named.trim() ? expandHome(named.trim(), env) : null;
  const git = (key: string) => {
    try {
      return execFileSync('git', ['config', '--get', key], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        env: env as NodeJS.ProcessEnv,
      }).trim();
    } catch {
      return '';
    }
  };
  if (git('gpg.format') !== 'ssh') return null;
  const fromGit = git('user.signingkey');
  return fromGit ? expandHome(fromGit, env) : null;
}

function expandHome(p: string, env: Record<string, string | undefined>): string {
  return p.startsWith('~/') ? path.join(env.HOME ?? os.homedir(), p.slice(2)) : p;
}

const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The 32-byte seed and public key of an unencrypted OpenSSH ed25519 private key; null for anything else. */
export function readOpenSshEd25519(text: string): { seed: Buffer; publicKey: Buffer; comment: string } | null {
  const m = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(text);
  const body = m?.[1];
  const bytes = body !== undefined ? base64Decode(body) : null;
  if (!bytes) return null;
  const buf = Buffer.from(bytes);
  let at = 0;
  const str = () => {
    const n = buf.readUInt32BE(at);
    const out = buf.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    return out;
  };
  try {
    if (buf.subarray(0, 15).toString('latin1') !== 'openssh-key-v1\0') return null;
    at = 15;
    if (str().toString() !== 'none' || str().toString() !== 'none') return null; // encrypted: ssh-keygen asks for the passphrase
    str(); // kdf options
    if (buf.readUInt32BE(at) !== 1) return null;
    at += 4;
    str(); // public key
    const priv = str();
    let p = 8; // check ints
    const pstr = () => {
      const n = priv.readUInt32BE(p);
      const out = priv.subarray(p + 4, p + 4 + n);
      p += 4 + n;
      return out;
    };
    if (pstr().toString() !== 'ssh-ed25519') return null;
    const publicKey = Buffer.from(pstr());
    const secret = pstr();
    const comment = pstr().toString();
    if (publicKey.length !== 32 || secret.length !== 64) return null;
    return { seed: Buffer.from(secret.subarray(0, 32)), publicKey, comment };
  } catch {
    return null;
  }
}

/** An unencrypted OpenSSH private key file for an ed25519 key (what `ssh-keygen -t ed25519 -N ''` writes). */
function openSshPrivateKey(seed: Buffer, publicKey: Buffer, comment: string): string {
  const check = randomBytes(4);
  const blob = Buffer.from(ed25519Blob(publicKey));
  let priv = Buffer.concat([
    check,
    check,
    sshString('ssh-ed25519'),
    sshString(publicKey),
    sshString(Buffer.concat([seed, publicKey])),
    sshString(comment),
  ]);
  for (let i = 1; priv.length % 8 !== 0; i++) priv = Buffer.concat([priv, Buffer.from([i])]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    Buffer.from([0, 0, 0, 1]),
    sshString(blob),
    sshString(priv),
  ]);
  const b64 = base64Encode(body);
  return [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    ...(b64.match(/.{1,70}/g) ?? []),
    '-----END OPENSSH PRIVATE KEY-----',
    '',
  ].join('\n');
}

/** Creates an ed25519 key pair at `file` (0600) and `file.pub`; returns the public key line and fingerprint. */
export function generateSigningKey(file: string, comment: string): { publicKey: string; fingerprint: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, openSshPrivateKey(seed, pub, comment), { mode: 0o600 });
  const line = publicKeyLine(ed25519Blob(pub));
  writeFileSync(`${file}.pub`, `${line} ${comment}\n`, { mode: 0o644 });
  return { publicKey: line, fingerprint: fingerprint(ed25519Blob(pub)) };
}

/** The public key line (`ssh-ed25519 AAAA…`) of a private key file, when this module can read it. */
export function publicKeyOf(file: string): string | null {
  const key = existsSync(file) ? readOpenSshEd25519(readFileSync(file, 'utf8')) : null;
  return key ? publicKeyLine(ed25519Blob(key.publicKey)) : null;
}

/**
 * Signs `message` for `namespace` with the key at `keyPath` and returns the armored SSHSIG
 * (`-----BEGIN SSH SIGNATURE-----`). A key that cannot be used is a UsageError that says why.
 */
export function signMessage(keyPath: string, namespace: string, message: string): string {
  const text = keyPath.startsWith('key::') ? null : existsSync(keyPath) ? readFileSync(keyPath, 'utf8') : undefined;
  if (text === undefined)
    throw new UsageError(
      `signing key ${keyPath} does not exist: set LOOPWRIGHT_SIGNING_KEY (or git's user.signingkey) to an ed25519 private key`,
    );
  const key = text ? readOpenSshEd25519(text) : null;
  if (key) {
    const privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519, key.seed]),
      format: 'der',
      type: 'pkcs8',
    });
    // A key file whose public half does not match its secret would sign for someone else: refuse it.
    const derived = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32);
    if (!derived.equals(key.publicKey))
      throw new UsageError(`signing key ${keyPath} is damaged: its public key does not match its secret`);
    const signature = sign(null, Buffer.from(signedData(namespace, Buffer.from(message, 'utf8'))), privateKey);
    return armorSignature(key.publicKey, namespace, signature);
  }
  return sshKeygenSign(keyPath, namespace, message);
}

/** `ssh-keygen -Y sign -f <key> -n <namespace>` over stdin (keys with a passphrase, in ssh-agent, or given as public keys). */
function sshKeygenSign(keyPath: string, namespace: string, message: string): string {
  let file = keyPath;
  if (keyPath.startsWith('key::')) {
    file = path.join(os.tmpdir(), `loopwright-key-${process.pid}-${Date.now()}.pub`);
    writeFileSync(file, `${keyPath.slice(5)}\n`, { mode: 0o600 });
  }
  const result = spawnSync('ssh-keygen', ['-Y', 'sign', '-f', file, '-n', namespace], {
    input: message,
    encoding: 'utf8',
  });
  if (result.error)
    throw new UsageError(
      `cannot sign with ${keyPath}: ssh-keygen is not installed (install OpenSSH, or use an unencrypted ed25519 key)`,
    );
  if (result.status !== 0 || !result.stdout.includes('BEGIN SSH SIGNATURE')) {
    throw new UsageError(
      `ssh-keygen could not sign with ${keyPath}: ${(result.stderr || 'no signature').trim().split('\n').pop()}`,
    );
  }
  return result.stdout.trim();
}
