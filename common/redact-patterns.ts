/**
 * What a secret looks like on its own, in one string as it stands (common/redact.ts adds the
 * normalised views). Every pattern here is linear: no nested quantifiers, and every run that
 * could be long has an upper bound, so a megabyte of `a.a.a.a…` costs one pass, not a square.
 */

import { must } from './must';
import { decodeBase64 } from './redact-decode';

const NOT_SECRET = /^(?:true|false|yes|no|on|off|enabled|disabled|none|null|undefined)$/i;
/** Whether a literal value is long and unusual enough to redact wherever it appears (8 characters or more, not a word like `disabled`). */
export const isSecretValue = (v: string) => v.length >= 8 && !NOT_SECRET.test(v) && !v.includes('[redacted]');

/** `[start, end)` of a secret in the text it was found in. */
export type Span = [number, number];

/** A credential's shape: its prefix, the characters of its body, and the body's length. */
export interface Shape {
  prefix: RegExp;
  body: RegExp;
  min: number;
  max: number;
}

/** Known credential shapes (Anthropic, OpenAI, GitHub, Slack, AWS, GitLab, npm, Hugging Face, Google, Stripe). */
export const SHAPES: Shape[] = [
  { prefix: /sk-ant-/, body: /[A-Za-z0-9_-]/, min: 8, max: 200 },
  { prefix: /sk-/, body: /[A-Za-z0-9_-]/, min: 20, max: 200 },
  { prefix: /gh[pousr]_/, body: /[A-Za-z0-9]/, min: 16, max: 64 },
  { prefix: /github_pat_/, body: /[A-Za-z0-9_]/, min: 20, max: 120 },
  { prefix: /xox[abposr]-/, body: /[A-Za-z0-9-]/, min: 8, max: 120 },
  { prefix: /A[KS]IA/, body: /[0-9A-Z]/, min: 16, max: 16 },
  { prefix: /glpat-/, body: /[A-Za-z0-9_-]/, min: 20, max: 64 },
  { prefix: /npm_/, body: /[A-Za-z0-9]/, min: 36, max: 36 },
  { prefix: /hf_/, body: /[A-Za-z]/, min: 30, max: 40 },
  { prefix: /AIza/, body: /[A-Za-z0-9_-]/, min: 35, max: 35 },
  { prefix: /[sr]k_(?:live|test)_/, body: /[A-Za-z0-9]/, min: 16, max: 120 },
];

const SECRETS: RegExp[] = [
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{16,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{8,}/g,
  /\bA[KS]IA[0-9A-Z]{16}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  /\bhf_[A-Za-z]{30,40}\b/g,
  /\bAIza[A-Za-z0-9_-]{35}\b/g,
  /\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}/g,
  // A JSON web token: three base64url parts, the first two JSON objects.
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,16384}?-----END [A-Z ]{0,40}PRIVATE KEY-----/g,
];
/** The credential after an HTTP auth scheme (group 3); `Basic` counts only when it decodes to `user:password`. */
const AUTH_SCHEME = /\b(Bearer|Basic)(\s{1,8})([A-Za-z0-9._~+/=-]{8,})/gi;
/** `://user:password@` or `://token@` in a URL (group 1 is the user info). Anchored at `://`, bounded. */
const URL_CREDENTIALS = /:\/\/([^\s/?#@]{1,256})@/g;
/** `name = value`, `name: value`, `"name": "value"`; the value is one token (quoted or not). */
const ASSIGNMENT = /(["']?)\b([A-Za-z_][A-Za-z0-9_.-]{0,63})\1(\s{0,8}[:=]\s{0,8})(["']?)([^\s"',;&]{4,})\4/g;
/**
 * A name whose value is a secret: it ends in one of these words (so `max_tokens: 100` and
 * `sort_key: name` are not).
 */
const SECRET_KEY_NAME =
  /(?:^|[_.-])(?:api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|secret[_-]?key|private[_-]?key|signing[_-]?key|auth[_-]?key|token|secret|password|passwd|passphrase|credentials?|pat|dsn|auth|authorization|cookie)$|^(?:api[_-]?key|apikey|token|secret|password|passwd|passphrase|pwd|credentials?|pat|authorization|cookie)$/i;
/** `*_KEY` is a secret (OPENAI_KEY, STRIPE_KEY) unless it names one of these ordinary keys. */
const KEY_NAME = /[_.-]key$/i;
const ORDINARY_KEY =
  /(?:^|[_.-])(?:sort|primary|foreign|partition|cache|group|idempotency|item|public|row|hash|lookup|map|dedup|dedupe|unique|index|cursor|query|route|message|i18n|translation)[_.-]key$/i;

/** Whether `name`'s assigned value is a secret: by its shape, or because it is configured. */
export function isSecretName(name: string, extra: ReadonlySet<string>): boolean {
  return (
    SECRET_KEY_NAME.test(name) || (KEY_NAME.test(name) && !ORDINARY_KEY.test(name)) || extra.has(name.toLowerCase())
  );
}

/** What one scan looks for beyond the shapes (prepared once per {@link Redaction}). */
export interface Prepared {
  names: ReadonlySet<string>;
  /** Literal secret values, longest first. */
  values: string[];
  /** The same values without whitespace (for text whose lines were joined). */
  squeezed: string[];
  /** The same values as letters and digits only, when 10 or more remain (for a value split by punctuation). */
  alnum: string[];
}

/** Capture group `n` of a match of one of the patterns above, where that group is not optional (it always takes part). */
function group(m: RegExpMatchArray, n: number): string {
  return must(m[n], `group ${n} of a secret pattern takes part in every match`);
}

/** The spans of every secret in `text` as it stands: shapes, auth schemes, URL credentials, assignments, literal values. */
export function rawSpans(text: string, p: Prepared, spans: Span[] = []): Span[] {
  literalSpans(text, p.values, spans);
  for (const pattern of SECRETS) for (const m of text.matchAll(pattern)) spans.push([m.index!, m.index! + m[0].length]);
  for (const m of text.matchAll(AUTH_SCHEME)) {
    const [scheme, space, token] = [group(m, 1), group(m, 2), group(m, 3)];
    const start = m.index! + scheme.length + space.length;
    if (scheme.toLowerCase() === 'basic' && !/^[\x20-\x7e]+:/.test(decodeBase64(token) ?? '')) continue;
    spans.push([start, start + token.length]);
  }
  for (const m of text.matchAll(URL_CREDENTIALS)) {
    const info = group(m, 1);
    const colon = info.indexOf(':');
    const start = m.index! + 3;
    // `user:password`: the password; a bare user info is a token when it is long (`https://ghp_…@github.com`), not `git@`.
    if (colon >= 0 && colon < info.length - 1) spans.push([start + colon + 1, start + info.length]);
    else if (colon < 0 && info.length >= 16) spans.push([start, start + info.length]);
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const [whole, name, vq, value] = [m[0], group(m, 2), group(m, 4), group(m, 5)];
    // `Authorization: Bearer …`: the scheme is not the secret (AUTH_SCHEME takes the credential).
    if (value === '[redacted]' || /^(?:bearer|basic|digest|token)$/i.test(value) || !isSecretName(name, p.names))
      continue;
    const end = m.index! + whole.length - vq.length;
    spans.push([end - value.length, end]);
  }
  return spans;
}

/** The spans of each of `values` (non-empty strings) in `text`. */
export function literalSpans(text: string, values: string[], spans: Span[] = []): Span[] {
  for (const value of values) {
    for (let i = text.indexOf(value); i >= 0; i = text.indexOf(value, i + value.length))
      spans.push([i, i + value.length]);
  }
  return spans;
}
