/**
 * Redaction: what must never show in a trace, a report, a search attribute or the Web UI's
 * summaries. Pure (no Node built-ins), so workflow code uses it too.
 *
 * Three kinds of secret are replaced with `[redacted]`:
 * - strings that look like credentials: `sk-ant-…`, `sk-…`, `ghp_…`, `github_pat_…`,
 *   `xox[abp]-…`, `AKIA…`, and the token after `Bearer`;
 * - the value assigned to a secret-looking name (`API_KEY=…`, `password: …`, `"token": "…"`):
 *   names ending in key, token, secret, password, passwd or credential, plus the configured names
 *   (`LOOPWRIGHT_REDACT=NAME,...`);
 * - the literal values of the process's secret variables (see {@link redactionFromEnv}), for
 *   a secret that shows up on its own.
 */

/** The placeholder a secret becomes. */
export const REDACTED = '[redacted]';

/** Environment variable names whose values are secrets (also kept from commands the model runs). */
export const SECRET_NAME = /API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/i;

const SECRETS: RegExp[] = [
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{16,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abp]-[A-Za-z0-9-]{8,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
];
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi;
/** `name = value`, `name: value`, `"name": "value"`; the value is one token (quoted or not). */
const ASSIGNMENT = /(["']?)\b([A-Za-z_][A-Za-z0-9_.-]*)\1(\s*[:=]\s*)(["']?)([^\s"',;&]{4,})\4/g;
/** A name whose value is a secret: it ends in one of these words (so `max_tokens: 100` is not). */
const SECRET_KEY_NAME = /(?:^|[_.-])(?:api[_-]?key|apikey|access[_-]?key|private[_-]?key|token|secret|password|passwd|credentials?)$|^(?:api[_-]?key|apikey|token|secret|password|passwd|credentials?)$/i;

/** What to redact beyond the built-in patterns. */
export interface Redaction {
  /** More names whose assigned values are secrets (case-insensitive). */
  names?: string[];
  /** Literal secret values (shorter than 8 characters, and words like `disabled`, are ignored, so they cannot erase prose). */
  values?: string[];
}

const NOT_SECRET = /^(?:true|false|yes|no|on|off|enabled|disabled|none|null|undefined)$/i;
const isSecretValue = (v: string) => v.length >= 8 && !NOT_SECRET.test(v);

/** Replaces every secret in `text` with `[redacted]` (see the file comment). */
export function redact(text: string, r: Redaction = {}): string {
  const extra = new Set((r.names ?? []).map((n) => n.toLowerCase()));
  let out = text;
  for (const value of [...new Set(r.values ?? [])].filter(isSecretValue).sort((a, b) => b.length - a.length)) out = out.split(value).join(REDACTED);
  out = out.replace(BEARER, `$1${REDACTED}`);
  for (const pattern of SECRETS) out = out.replace(pattern, REDACTED);
  return out.replace(ASSIGNMENT, (whole, q: string, name: string, sep: string, vq: string, value: string) =>
    value !== REDACTED && (SECRET_KEY_NAME.test(name) || extra.has(name.toLowerCase())) ? `${q}${name}${q}${sep}${vq}${REDACTED}${vq}` : whole,
  );
}

/** A copy of a JSON-like value with every string redacted. */
export function redactDeep<T>(value: T, r: Redaction = {}): T {
  if (typeof value === 'string') return redact(value, r) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => redactDeep(v, r)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v as unknown, r)])) as T;
  }
  return value;
}

/** The names configured in LOOPWRIGHT_REDACT (comma- or space-separated). */
export function redactNames(env: Record<string, string | undefined>): string[] {
  return (env.LOOPWRIGHT_REDACT ?? '').split(/[\s,]+/).filter(Boolean);
}

/**
 * The redaction a process applies: the configured names, and the values of its secret
 * variables (names matching {@link SECRET_NAME} or configured), so a key that appears on its own
 * (in a candidate, a tool's output, a report) is still caught. The values never leave the process.
 */
export function redactionFromEnv(env: Record<string, string | undefined>, names: string[] = []): Redaction {
  const configured = new Set([...redactNames(env), ...names].map((n) => n.toLowerCase()));
  const values = Object.entries(env).flatMap(([name, value]) => (value && (SECRET_NAME.test(name) || configured.has(name.toLowerCase())) ? [value] : []));
  return { names: [...configured], values };
}
