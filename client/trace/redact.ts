/** Things that look like credentials: API keys, tokens, AWS access key ids. */
const SECRETS: RegExp[] = [
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{16,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abp]-[A-Za-z0-9-]{8,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
];
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi;

/** The placeholder a secret becomes. */
export const REDACTED = '[redacted]';

/**
 * Replaces strings that look like API keys or tokens (`sk-ant-…`, `sk-…`, `ghp_…`,
 * `xox[abp]-…`, `AKIA…`, `Bearer <token>`) with `[redacted]`, so a trace can be shared.
 */
export function redact(text: string): string {
  let out = text.replace(BEARER, `$1${REDACTED}`);
  for (const pattern of SECRETS) out = out.replace(pattern, REDACTED);
  return out;
}

/** A copy of a JSON-like value with every string redacted. */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => redactDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v as unknown)])) as T;
  }
  return value;
}
