import { KeyMissingError, NO_RING, open, seal, type KeyRing } from '../crypto/keyring';
import { LoopwrightError } from '../common/errors';

/**
 * The at-rest format of the files the worker encrypts with the operator's key ring (transcript
 * blobs, reports kept outside the workspace): one ASCII header line, `lwsealed:1:<key id>\n`,
 * then the bytes {@link seal} makes (nonce | AES-256-GCM ciphertext | tag). The header names
 * the key, so any key of the ring opens what it once sealed (rotation keeps old files readable).
 * Plaintext never starts with `lwsealed:` (canonical JSON starts with `{ [ " - t f n` or a digit,
 * a report with `#`), so files written before encryption are told apart and still read.
 */
export const SEALED_PREFIX = 'lwsealed:';
const VERSION = '1';
const PREFIX_BYTES = Buffer.from(SEALED_PREFIX, 'ascii');

/** A sealed file this version cannot read: an unknown format version or a broken header. */
export class SealedFormatError extends LoopwrightError {
  constructor(
    readonly what: string,
    detail: string,
  ) {
    super(`${what} is not a readable sealed file: ${detail}`);
  }
}

/** A sealed file that does not authenticate: altered, truncated, or moved under another name. */
export class SealedOpenError extends LoopwrightError {
  constructor(
    readonly what: string,
    cause: unknown,
  ) {
    super(`${what} does not open: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Whether `bytes` are in the sealed format (else they are legacy plaintext). */
export function isSealed(bytes: Uint8Array): boolean {
  return (
    bytes.length >= PREFIX_BYTES.length &&
    Buffer.from(bytes.buffer, bytes.byteOffset, PREFIX_BYTES.length).equals(PREFIX_BYTES)
  );
}

/** `plain` sealed with the ring's current key, bound to `aad` (the file's name): header and sealed bytes. */
export function sealFile(ring: KeyRing, plain: Uint8Array | string, aad: string): Buffer {
  const { keyId, sealed } = seal(
    ring,
    typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain,
    Buffer.from(aad, 'utf8'),
  );
  return Buffer.concat([Buffer.from(`${SEALED_PREFIX}${VERSION}:${keyId}\n`, 'ascii'), sealed]);
}

/** The key id a sealed file names. Throws a {@link SealedFormatError} when the header is broken. */
export function sealedKeyId(bytes: Uint8Array, what: string): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = buf.indexOf(0x0a);
  if (end < 0 || end > 128) throw new SealedFormatError(what, 'its header line has no end');
  const [version, keyId] = buf.subarray(PREFIX_BYTES.length, end).toString('ascii').split(':');
  if (version !== VERSION)
    throw new SealedFormatError(
      what,
      `format version ${version} is not ${VERSION}: it was written by a newer Loopwright`,
    );
  if (!keyId) throw new SealedFormatError(what, 'its header names no key');
  return keyId;
}

/**
 * The plaintext of a sealed file. A key the ring lacks (or no ring at all) is a
 * {@link KeyMissingError} naming the key id; anything that does not authenticate with `aad`
 * (altered, truncated, renamed) is a {@link SealedOpenError}.
 */
export function openFile(ring: KeyRing | undefined, bytes: Uint8Array, aad: string, what: string): Buffer {
  const keyId = sealedKeyId(bytes, what);
  if (!ring) throw new KeyMissingError(keyId, NO_RING);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return open(ring, keyId, buf.subarray(buf.indexOf(0x0a) + 1), Buffer.from(aad, 'utf8'));
  } catch (err) {
    if (err instanceof KeyMissingError) throw err;
    throw new SealedOpenError(what, err);
  }
}
