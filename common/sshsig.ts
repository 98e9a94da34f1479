import { ed25519 } from '@noble/curves/ed25519';
import { sha256, sha512 } from '@noble/hashes/sha2';
import { must } from './must';

/**
 * SSH signatures, the way `git` signs commits with `gpg.format ssh`: the SSHSIG format
 * (OpenSSH's PROTOCOL.sshsig) over a namespace, checked against an `allowed_signers` file
 * (ssh-keygen(1) "ALLOWED SIGNERS"). Pure and deterministic (no Node.js APIs), so workflow code
 * verifies decisions with it; ed25519 keys only (what `ssh-keygen -t ed25519` makes).
 */

/** What a person's decision is signed for; a signature for another namespace never verifies here. */
export const DECISION_NAMESPACE = 'loopwright-decision';
/** What an operator's autonomy grant is signed for. */
export const GRANT_NAMESPACE = 'loopwright-grant';

/** One usable line of an allowed_signers file. */
export interface AllowedSigner {
  /** Principal patterns (`alice@example.com`, `*@example.com`). */
  principals: string[];
  /** Namespaces the key may sign for; null: any. */
  namespaces: string[] | null;
  /** Milliseconds since the epoch; the key is valid from/until then (null: always). */
  validAfter: number | null;
  validBefore: number | null;
  /** The ssh-ed25519 public key blob. */
  key: Uint8Array;
  fingerprint: string;
  line: number;
}

/** An allowed_signers file: the entries it holds and the lines it could not use (with why). */
export interface AllowedSigners {
  entries: AllowedSigner[];
  skipped: Array<{ line: number; reason: string }>;
}

export type Verified = { ok: true; principal: string; fingerprint: string } | { ok: false; reason: string };

// --- bytes -----------------------------------------------------------------------------------

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

export function utf8(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    let c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

export function base64Decode(text: string): Uint8Array | null {
  const clean = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) return null;
  const body = clean.replace(/=+$/, '');
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of body) {
    value = (value << 6) | B64.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >> bits) & 0xff);
    }
  }
  return Uint8Array.from(out);
}

export function base64Encode(bytes: Uint8Array, pad = true): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const [b0 = 0, b1 = 0, b2 = 0] = bytes.subarray(i, i + 3);
    const n = (b0 << 16) | (b1 << 8) | b2;
    const chars = [
      B64[(n >> 18) & 63],
      B64[(n >> 12) & 63],
      i + 1 < bytes.length ? B64[(n >> 6) & 63] : '=',
      i + 2 < bytes.length ? B64[n & 63] : '=',
    ];
    s += chars.join('');
  }
  return pad ? s : s.replace(/=+$/, '');
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** An SSH wire-format `string`: a big-endian uint32 length, then the bytes. */
export function sshString(data: Uint8Array | string): Uint8Array {
  const bytes = typeof data === 'string' ? utf8(data) : data;
  const n = bytes.length;
  return concat(Uint8Array.from([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]), bytes);
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Reads SSH wire-format fields; every read past the end throws. */
class Reader {
  private at = 0;
  constructor(private readonly bytes: Uint8Array) {}
  raw(n: number): Uint8Array {
    if (this.at + n > this.bytes.length) throw new Error('truncated');
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  uint32(): number {
    const b = this.raw(4);
    return new DataView(b.buffer, b.byteOffset, 4).getUint32(0);
  }
  string(): Uint8Array {
    return this.raw(this.uint32());
  }
  text(): string {
    return latin1(this.string());
  }
  done(): boolean {
    return this.at === this.bytes.length;
  }
}

// --- keys ------------------------------------------------------------------------------------

/** `SHA256:<base64>`, the fingerprint `ssh-keygen -l` prints for a public key blob. */
export function fingerprint(blob: Uint8Array): string {
  return `SHA256:${base64Encode(sha256(blob), false)}`;
}

/** The 32-byte ed25519 key of an `ssh-ed25519` public key blob, or null. */
function ed25519Key(blob: Uint8Array): Uint8Array | null {
  try {
    const r = new Reader(blob);
    if (r.text() !== 'ssh-ed25519') return null;
    const key = r.string();
    return key.length === 32 && r.done() ? key : null;
  } catch {
    return null;
  }
}

/** The blob of an `ssh-ed25519 AAAA… [comment]` line (an `.pub` file), or null. */
export function parsePublicKey(line: string): Uint8Array | null {
  const [type, b64] = line.trim().split(/\s+/);
  if (type !== 'ssh-ed25519' || !b64) return null;
  const blob = base64Decode(b64);
  return blob && ed25519Key(blob) ? blob : null;
}

/** `ssh-ed25519 AAAA…` for a public key blob. */
export function publicKeyLine(blob: Uint8Array): string {
  return `ssh-ed25519 ${base64Encode(blob)}`;
}

/** The public key blob of a 32-byte ed25519 public key. */
export function ed25519Blob(publicKey: Uint8Array): Uint8Array {
  return concat(sshString('ssh-ed25519'), sshString(publicKey));
}

// --- allowed_signers -------------------------------------------------------------------------

/** Splits on whitespace or `sep` outside double quotes; the quotes are kept (see `unquote`). */
function split(text: string, sep: RegExp): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    if (!quoted && sep.test(ch)) {
      if (cur) out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur) out.push(cur);
  return out;
}

const unquote = (s: string) => s.replace(/"/g, '');

/** `YYYYMMDD[HHMM[SS]]` (UTC with a trailing Z, else read as UTC too: workers differ in zones) → ms. */
function sshTime(value: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?Z?$/.exec(value);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0'] = m;
  const t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  return Number.isNaN(t) ? null : t;
}

/**
 * Parses an allowed_signers file: `principals [options] ssh-ed25519 <base64> [comment]` per
 * line; `#` comments and blank lines are skipped. Options understood: `namespaces="…"`,
 * `valid-after=…`, `valid-before=…`. Lines with `cert-authority`, other key types or unknown
 * options are skipped (listed with why): a key this verifier cannot honour exactly is never used.
 */
export function parseAllowedSigners(text: string): AllowedSigners {
  const entries: AllowedSigner[] = [];
  const skipped: AllowedSigners['skipped'] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const trimmed = raw.trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    const f = split(trimmed, /[ \t]/);
    const typeAt = f.findIndex((x, j) => j > 0 && /^(ssh-|ecdsa-|sk-)/.test(x));
    if (typeAt < 0 || typeAt > 2)
      return void skipped.push({ line, reason: 'expected: principals [options] ssh-ed25519 <key>' });
    if (f[typeAt] !== 'ssh-ed25519')
      return void skipped.push({ line, reason: `${f[typeAt]} keys are not supported (use ssh-ed25519)` });
    const blob = parsePublicKey(`${f[typeAt]} ${f[typeAt + 1] ?? ''}`);
    if (!blob) return void skipped.push({ line, reason: 'the ssh-ed25519 key does not decode' });
    const entry: AllowedSigner = {
      principals: unquote(must(f[0], 'the key type comes after the principals')).split(',').filter(Boolean),
      namespaces: null,
      validAfter: null,
      validBefore: null,
      key: blob,
      fingerprint: fingerprint(blob),
      line,
    };
    for (const option of typeAt === 2 ? split(must(f[1], 'options come before the key type'), /,/) : []) {
      const eq = option.indexOf('=');
      const name = (eq < 0 ? option : option.slice(0, eq)).toLowerCase();
      const value = eq < 0 ? '' : unquote(option.slice(eq + 1));
      if (name === 'namespaces') entry.namespaces = value.split(',').filter(Boolean);
      else if (name === 'valid-after' || name === 'valid-before') {
        const t = sshTime(value);
        if (t === null) return void skipped.push({ line, reason: `${name}="${value}" is not YYYYMMDD[HHMM[SS]]` });
        if (name === 'valid-after') entry.validAfter = t;
        else entry.validBefore = t;
      } else return void skipped.push({ line, reason: `option ${name} is not supported` });
    }
    if (!entry.principals.length) return void skipped.push({ line, reason: 'no principal' });
    entries.push(entry);
  });
  return { entries, skipped };
}

/** ssh-keygen's pattern match: `*` any run, `?` one character, case-sensitive. */
function matchPattern(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(name);
}

/** True when an entry lets `principal` sign for `namespace` at `now`. Negated patterns (`!x`) refuse. */
function admits(entry: AllowedSigner, principal: string, namespace: string, now: number): boolean {
  const negated = entry.principals.filter((p) => p.startsWith('!'));
  if (negated.some((p) => matchPattern(p.slice(1), principal))) return false;
  if (!entry.principals.some((p) => !p.startsWith('!') && matchPattern(p, principal))) return false;
  if (entry.namespaces && !entry.namespaces.some((ns) => matchPattern(ns, namespace))) return false;
  if (entry.validAfter !== null && now < entry.validAfter) return false;
  if (entry.validBefore !== null && now > entry.validBefore) return false;
  return true;
}

/**
 * Whether `allowed` (read again now) still lets the key `fingerprint` sign as `principal` for
 * `namespace` at `now`: a key removed from the list, or whose principals or validity changed,
 * no longer does.
 */
export function stillAllows(
  allowed: AllowedSigners,
  fingerprint: string,
  principal: string,
  namespace: string,
  now: number,
): boolean {
  return allowed.entries.some((e) => e.fingerprint === fingerprint && admits(e, principal, namespace, now));
}

// --- SSHSIG ----------------------------------------------------------------------------------

const MAGIC = utf8('SSHSIG');
const BEGIN = '-----BEGIN SSH SIGNATURE-----';
const END = '-----END SSH SIGNATURE-----';

/** What is really signed: the SSHSIG preamble, the namespace and the hash of the message. */
export function signedData(namespace: string, message: Uint8Array, hash: 'sha512' | 'sha256' = 'sha512'): Uint8Array {
  const digest = hash === 'sha512' ? sha512(message) : sha256(message);
  return concat(MAGIC, sshString(namespace), sshString(''), sshString(hash), sshString(digest));
}

/** The armored SSHSIG of an ed25519 `signature` by `publicKey` (32 bytes) over `signedData(namespace, …)`. */
export function armorSignature(publicKey: Uint8Array, namespace: string, signature: Uint8Array): string {
  const blob = concat(
    MAGIC,
    Uint8Array.from([0, 0, 0, 1]),
    sshString(ed25519Blob(publicKey)),
    sshString(namespace),
    sshString(''),
    sshString('sha512'),
    sshString(concat(sshString('ssh-ed25519'), sshString(signature))),
  );
  const b64 = base64Encode(blob);
  return [BEGIN, ...(b64.match(/.{1,70}/g) ?? []), END].join('\n');
}

interface ParsedSignature {
  publicKey: Uint8Array;
  namespace: string;
  hash: 'sha512' | 'sha256';
  signature: Uint8Array;
}

function parseArmored(armored: string): ParsedSignature | string {
  const text = armored.trim();
  if (!text.startsWith(BEGIN) || !text.endsWith(END))
    return 'not an SSH signature (expected -----BEGIN SSH SIGNATURE-----)';
  const blob = base64Decode(text.slice(BEGIN.length, text.length - END.length));
  if (!blob) return 'the signature is not valid base64';
  try {
    const r = new Reader(blob);
    if (!equal(r.raw(6), MAGIC)) return 'the signature lacks the SSHSIG preamble';
    if (r.uint32() !== 1) return 'unsupported SSHSIG version';
    const publicKey = r.string();
    const namespace = r.text();
    r.string(); // reserved
    const hash = r.text();
    if (hash !== 'sha512' && hash !== 'sha256') return `unsupported hash ${hash}`;
    const sig = new Reader(r.string());
    if (!r.done()) return 'trailing bytes after the signature';
    const type = sig.text();
    if (type !== 'ssh-ed25519') return `${type} signatures are not supported (sign with an ssh-ed25519 key)`;
    const signature = sig.string();
    if (!ed25519Key(publicKey)) return 'the signing key is not an ssh-ed25519 key';
    return { publicKey, namespace, hash, signature };
  } catch {
    return 'the signature is truncated';
  }
}

/**
 * Checks that `armored` is `principal`'s SSHSIG over `message` for `namespace`, by a key the
 * allowed signers list for that principal and namespace at `now` (ms). The reason of a failure
 * is one line.
 */
export function verifySignature(opts: {
  armored: string;
  message: Uint8Array | string;
  namespace: string;
  principal: string;
  allowed: AllowedSigners;
  now: number;
}): Verified {
  const parsed = parseArmored(opts.armored);
  if (typeof parsed === 'string') return { ok: false, reason: parsed };
  const fp = fingerprint(parsed.publicKey);
  if (parsed.namespace !== opts.namespace)
    return { ok: false, reason: `the signature is for namespace "${parsed.namespace}", not "${opts.namespace}"` };
  const message = typeof opts.message === 'string' ? utf8(opts.message) : opts.message;
  let good = false;
  try {
    good = ed25519.verify(
      parsed.signature,
      signedData(parsed.namespace, message, parsed.hash),
      ed25519Key(parsed.publicKey)!,
    );
  } catch {
    good = false;
  }
  if (!good)
    return {
      ok: false,
      reason: `the signature by key ${fp} does not match this decision (signed for another run or decision, or altered)`,
    };
  const entries = opts.allowed.entries.filter((e) => equal(e.key, parsed.publicKey));
  const [first] = entries;
  if (!first) return { ok: false, reason: `key ${fp} is not in the worker's allowed signers` };
  if (!entries.some((e) => admits(e, opts.principal, opts.namespace, opts.now))) {
    return {
      ok: false,
      reason: `key ${fp} may not sign as "${opts.principal}" for ${opts.namespace} (see the allowed signers, line ${first.line})`,
    };
  }
  return { ok: true, principal: opts.principal, fingerprint: fp };
}

/** JSON with object keys sorted at every level: the canonical bytes that signatures cover. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
