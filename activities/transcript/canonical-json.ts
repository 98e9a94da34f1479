import { createHash } from 'node:crypto';

/** Prefix of every blob ref: the hash function that names the blob. */
export const REF_PREFIX = 'sha256:';

const REF_PATTERN = /^sha256:([0-9a-f]{64})$/;

/**
 * JSON with object keys sorted at every depth, so equal values give equal text whatever
 * order their keys were built in. Follows `JSON.stringify` otherwise (`toJSON` is honoured,
 * `undefined` properties are dropped). Throws a TypeError for a value JSON cannot hold
 * (`undefined`, a function or a symbol at the top, a BigInt anywhere); a cyclic value
 * overflows the stack (RangeError), as the sorted copies hide the cycle from `JSON.stringify`.
 */
export function canonicalJson(value: unknown): string {
  const json = JSON.stringify(value, (_key, v: unknown) => (isObject(v) ? sortKeys(v) : v));
  if (json === undefined) throw new TypeError(`cannot store ${typeof value} as JSON`);
  return json;
}

/** Lowercase hex SHA-256 of a string (as UTF-8) or of raw bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The ref a value is stored under: `sha256:` and the hash of its canonical JSON. */
export function blobRef(value: unknown): string {
  return REF_PREFIX + sha256Hex(canonicalJson(value));
}

/** The hex digest inside a ref, or undefined when `ref` is not `sha256:<64 lowercase hex>`. */
export function refHex(ref: string): string | undefined {
  return REF_PATTERN.exec(ref)?.[1];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sortKeys(obj: Record<string, unknown>): Record<string, unknown> {
  // fromEntries defines own properties, so a key named "__proto__" stays data, not a prototype.
  return Object.fromEntries(
    Object.keys(obj)
      .sort()
      .map((k) => [k, obj[k]]),
  );
}
