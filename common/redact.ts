/**
 * Redaction: what must never show in `status`, `review`, `list`, a trace, a report, a search
 * attribute, a metric's labels or the Web UI's summaries. Pure (no Node built-ins), so workflow
 * code uses it too.
 *
 * Three kinds of secret are replaced with `[redacted]`:
 * - strings that look like credentials: `sk-ant-…`, `sk-…`, `ghp_…`, `github_pat_…`,
 *   `xox[abp]-…`, `AKIA…`, `glpat-…`, `npm_…`, JSON web tokens, private key blocks, the token
 *   after `Bearer` (and `Basic`), the password in `scheme://user:password@host`;
 * - the value assigned to a secret-looking name (`API_KEY=…`, `password: …`, `"token": "…"`,
 *   `OPENAI_KEY=…`, `GH_PAT=…`), plus the configured names (`LOOPWRIGHT_REDACT=NAME,...`);
 * - the literal values of the process's variables (see {@link redactionFromEnv}), for a secret
 *   that shows up on its own.
 *
 * Before matching, the text is also read normalised (common/redact-decode.ts): without
 * zero-width and invisible characters, with `%XX` decoded, with spaced-out characters joined
 * (`g h p _ …`), with a known shape's pieces joined across spaces, dashes and line breaks
 * (common/redact-shapes.ts), without whitespace (for literal values). Base64 (standard and
 * url-safe) and hex runs of 16 characters or more are decoded, and a run whose decoded text
 * holds a secret is redacted whole. What is found in a normalised view is redacted where it
 * stands in the original text. The work is linear; a text over a megabyte is redacted a
 * megabyte at a time (cut at line breaks), and decoding stops after {@link DECODE_BUDGET} characters.
 */
import {
  alnumOnly,
  decodeBase64,
  decodeHex,
  normalised,
  spacedOut,
  squeezed,
  toOriginal,
  type View,
} from './redact-decode';
import { must } from './must';
import { isSecretValue, literalSpans, rawSpans, type Prepared, type Span } from './redact-patterns';
import { shapeSpans } from './redact-shapes';

export { redactionFromEnv, redactNames, isSafeEnvName } from './redact-env';
export { isSecretValue } from './redact-patterns';

/** The placeholder a secret becomes. */
export const REDACTED = '[redacted]';

/**
 * Marks a string that workflow code shows in the Web UI (activity and timer summaries, current
 * details, a child run's summary). Workflow code cannot see the worker's environment, so it
 * redacts patterns and the run's pinned names; the worker's payload codec (crypto/display-codec.ts)
 * then redacts a marked string with the worker's own secret values as it leaves the worker, and
 * drops the mark. Two invisible characters, so a string that never meets that codec reads the same.
 */
export const DISPLAY_MARK = '\u2064\u2063';

/** `text` redacted (patterns, `r`) and marked for the worker's redaction of its own secrets (see {@link DISPLAY_MARK}). */
export function forDisplay(text: string, r: Redaction = {}): string {
  return DISPLAY_MARK + redact(text, r);
}

/** `text` without a {@link DISPLAY_MARK} at its start. */
export function unmarked(text: string): string {
  return text.startsWith(DISPLAY_MARK) ? text.slice(DISPLAY_MARK.length) : text;
}

/** Environment variable names whose values are secrets (also kept from commands the model runs). */
export const SECRET_NAME = /API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/i;

/** What to redact beyond the built-in patterns. */
export interface Redaction {
  /** More names whose assigned values are secrets (case-insensitive). */
  names?: string[];
  /** Literal secret values (shorter than 8 characters, and words like `disabled`, are ignored, so they cannot erase prose). */
  values?: string[];
}

/** Characters decoded (base64, hex) per call at most: beyond, encoded runs are left as they are. */
export const DECODE_BUDGET = 4_000_000;
/** Texts longer than this are redacted in pieces of about this size. */
const CHUNK = 1 << 20;
const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g;
const HEX_RUN = /[0-9A-Fa-f]{32,}/g;

const prepared = new WeakMap<Redaction, Prepared>();
function prepare(r: Redaction): Prepared {
  let p = prepared.get(r);
  if (!p) {
    const values = [...new Set(r.values ?? [])].filter(isSecretValue).sort((a, b) => b.length - a.length);
    const squeezedValues = [...new Set(values.map((v) => v.replace(/\s+/g, '')))].filter(isSecretValue);
    const alnum = [...new Set(values.map((v) => v.replace(/[^A-Za-z0-9]/g, '')))].filter((v) => v.length >= 10);
    p = { names: new Set((r.names ?? []).map((n) => n.toLowerCase())), values, squeezed: squeezedValues, alnum };
    prepared.set(r, p);
  }
  return p;
}

/** Replaces every secret in `text` with `[redacted]` (see the file comment). */
export function redact(text: string, r: Redaction = {}): string {
  if (typeof text !== 'string' || text.length === 0) return text;
  const p = prepare(r);
  const budget: Budget = { left: DECODE_BUDGET, seen: new Map() };
  if (text.length <= CHUNK) return settle(text, p, budget);
  let out = '';
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + CHUNK);
    if (end < text.length) {
      const cut = text.lastIndexOf('\n', end);
      if (cut > at + CHUNK / 2) end = cut + 1;
    }
    const piece = text.slice(at, end);
    out += settle(piece, p, budget);
    at = end;
  }
  return out;
}

/** What decoding may still cost in one call, and what each encoded run held. */
interface Budget {
  left: number;
  seen: Map<string, boolean>;
}

/**
 * `text` redacted until nothing more is found (at most three rounds): a replacement can expose
 * a secret that touched the one replaced (`<value>ghp_…` has no word boundary before `ghp_`).
 */
function settle(text: string, p: Prepared, budget: Budget): string {
  let out = text;
  for (let round = 0; round < 3; round++) {
    const spans = secretSpans(out, p, 0, budget);
    if (spans.length === 0) break;
    out = replace(out, spans);
  }
  return out;
}

/** Every secret's span in `text`: as it stands, in its normalised views, and inside its encoded runs. */
function secretSpans(text: string, p: Prepared, depth: number, budget: Budget): Span[] {
  const spans: Span[] = [];
  rawSpans(text, p, spans);
  shapeSpans(text, spans);
  const mapped = (view: View | null, found: Span[]) => view && found.forEach((s) => spans.push(toOriginal(view, s)));
  const norm = normalised(text);
  if (norm) mapped(norm, shapeSpans(norm.text, rawSpans(norm.text, p)));
  const spaced = spacedOut(norm, text);
  if (spaced) mapped(spaced, shapeSpans(spaced.text, rawSpans(spaced.text, p)));
  if (p.squeezed.length) {
    const flat = squeezed(norm, text);
    if (flat) mapped(flat, literalSpans(flat.text, p.squeezed));
  }
  if (p.alnum.length) {
    const bare = alnumOnly(norm, text, p.alnum);
    if (bare) mapped(bare, literalSpans(bare.text, p.alnum));
  }
  if (depth < 2) {
    encodedSpans(text, p, depth, budget, spans);
    if (norm) mapped(norm, encodedSpans(norm.text, p, depth, budget, []));
  }
  return spans;
}

/** Base64 and hex runs of `text` whose decoded text holds a secret (redacted whole). */
function encodedSpans(text: string, p: Prepared, depth: number, budget: Budget, spans: Span[]): Span[] {
  // Decoded text is searched when it reads as text, at every alignment tried (a misaligned
  // decoding can read as text too, so the first that does is not enough).
  const holds = (run: string, decodings: Array<() => string | undefined>): boolean => {
    const known = budget.seen.get(run);
    if (known !== undefined) return known;
    let found = false;
    for (const decode of decodings) {
      if (budget.left <= 0 || found) break;
      const decoded = decode();
      budget.left -= run.length;
      if (decoded === undefined || decoded.length === 0 || !readsAsText(decoded)) continue;
      found = secretSpans(decoded, p, depth + 1, budget).length > 0;
    }
    if (budget.seen.size < 10_000) budget.seen.set(run, found);
    return found;
  };
  const base64 = (run: string, off: number) => () => {
    let body = run.slice(off).replace(/=+$/, '');
    if (body.length % 4 === 1) body = body.slice(0, -1);
    return decodeBase64(body);
  };
  for (const m of text.matchAll(BASE64_RUN)) {
    if (budget.left <= 0) return spans;
    const run = m[0];
    // The run may start before the encoded text does (`key:` + base64): each alignment is tried.
    const tries = [0, 1, 2, 3].filter((off) => run.length - off >= 16).map((off) => base64(run, off));
    if (holds(run, tries)) spans.push([m.index!, m.index! + run.length]);
  }
  for (const m of text.matchAll(HEX_RUN)) {
    if (budget.left <= 0) return spans;
    const run = m[0];
    if (
      holds(
        `hex:${run}`,
        [0, 1].map((off) => () => decodeHex(run.slice(off, off + ((run.length - off) & ~1)))),
      )
    )
      spans.push([m.index!, m.index! + run.length]);
  }
  return spans;
}

/** Whether decoded bytes read as text (mostly printable), so a run that was not base64 (an identifier, random bytes) is not searched. */
function readsAsText(s: string): boolean {
  let printable = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 9 || c === 10 || c === 13 || c >= 160) printable++;
  }
  return printable >= s.length * 0.9;
}

/** `text` with the (merged) spans replaced by `[redacted]`. */
function replace(text: string, spans: Span[]): string {
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let at = 0;
  let i = 0;
  while (i < spans.length) {
    let [start, end] = must(spans[i++], 'the loop runs while i < spans.length');
    for (let next = spans[i]; next && next[0] <= end; next = spans[++i]) end = Math.max(end, next[1]);
    if (start < at) start = at;
    out += text.slice(at, start) + REDACTED;
    at = end;
  }
  return out + text.slice(at);
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
