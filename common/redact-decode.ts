/**
 * Normalised views of a text for redaction (common/redact.ts): the same text with invisible
 * characters dropped and `%XX` decoded, with spaced-out characters joined, without whitespace;
 * and decoders for base64 and hex runs. A view remembers, for each of its characters, which
 * characters of the original it came from, so a secret found in a view is redacted where it
 * stands in the original. Pure and linear.
 */
import type { Span } from './redact-patterns';

/** A derived text and, per character, the `[from, to)` of the original characters it stands for. */
export interface View {
  text: string;
  from: Int32Array;
  to: Int32Array;
}

/** Zero-width and invisible characters: soft hyphen, joiners, marks, bidi controls, word joiner, BOM, fillers, variation selectors. */
export const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u3164\uFE00-\uFE0F\uFEFF\uFFA0]/;
const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'g');
const PERCENT = /%[0-9A-Fa-f]{2}/;

/** Maps a span of `view` back to the original text. */
export function toOriginal(view: View, [s, e]: Span): Span {
  return [view.from[s], view.to[e - 1]];
}

function hex(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** A view builder over `src` (whose own map, if any, is composed in). */
function builder(n: number, src: View | null) {
  const codes = new Uint16Array(n);
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  let len = 0;
  return {
    push(code: number, start: number, end: number) {
      codes[len] = code;
      from[len] = src ? src.from[start] : start;
      to[len] = src ? src.to[end - 1] : end;
      len++;
    },
    view(): View {
      let text = '';
      for (let i = 0; i < len; i += 8192) text += String.fromCharCode(...codes.subarray(i, Math.min(len, i + 8192)));
      return { text, from: from.subarray(0, len), to: to.subarray(0, len) };
    },
  };
}

/** `text` without invisible characters and with `%XX` decoded (twice, for `%25XX`); null when nothing changes. */
export function normalised(text: string): View | null {
  let view: View | null = null;
  for (let pass = 0; pass < 2; pass++) {
    const t = view ? view.text : text;
    if (!(pass === 0 && INVISIBLE.test(t)) && !PERCENT.test(t)) break;
    INVISIBLE_ALL.lastIndex = 0;
    const b = builder(t.length, view);
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c === 37 && i + 2 < t.length && hex(t.charCodeAt(i + 1)) >= 0 && hex(t.charCodeAt(i + 2)) >= 0) {
        b.push(hex(t.charCodeAt(i + 1)) * 16 + hex(t.charCodeAt(i + 2)), i, i + 3);
        i += 2;
      } else if (c < 0xad || !INVISIBLE.test(t[i])) b.push(c, i, i + 1);
    }
    view = b.view();
  }
  return view;
}

/** A quick test for a run of at least 8 single characters that {@link spacedOut} would join (bounded, so linear). */
const SPACED_RUN = /(?:[^\s\u00a0][ \t\u00a0]){7}[^\s\u00a0]|(?:\w[-.:]){7}\w/;
const isSpace = (c: number) => c === 32 || c === 9 || c === 0xa0;
const isSeparator = (c: number) => c === 45 || c === 46 || c === 58; // - . :
const isPiece = (c: number) => c > 32 && c !== 0xa0 && c < 0x2000;
const isAlnum = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/**
 * `src` with spaced-out characters joined: in a run of at least 8 single characters each
 * separated by one space (`g h p _ a b c`) or one `-`, `.`, `:` between letters and digits
 * (`g-h-p-_-a`), the separators are dropped. Null when there is no such run.
 */
export function spacedOut(src: View | null, text: string): View | null {
  const t = src ? src.text : text;
  if (!SPACED_RUN.test(t)) return null;
  const n = t.length;
  const at = (k: number) => (k < n ? t.charCodeAt(k) : -1);
  const b = builder(n, src);
  let changed = false;
  let i = 0;
  while (i < n) {
    const sep = at(i + 1);
    const ok = isSpace(sep) ? isPiece : isSeparator(sep) ? isAlnum : null;
    if (ok && ok(at(i))) {
      // Single pieces p, sep, p, sep, … (what follows, `s k - a n t - api03…`, is the shape walk's to join).
      let j = i;
      let pieces = 0;
      while (ok(at(j))) {
        pieces++;
        // Join the next piece only while it is a single character: a word after the run stays a word.
        if (at(j + 1) === sep && ok(at(j + 2)) && !ok(at(j + 3))) j += 2;
        else {
          j++;
          break;
        }
      }
      if (pieces >= 8) {
        for (let k = i; k < j; k += 2) b.push(t.charCodeAt(k), k, k + 1);
        changed = true;
        i = j;
        continue;
      }
    }
    b.push(t.charCodeAt(i), i, i + 1);
    i++;
  }
  return changed ? b.view() : null;
}

/** `src` without whitespace (a secret broken over lines or spaces), for literal values only. Null when it has none. */
export function squeezed(src: View | null, text: string): View | null {
  const t = src ? src.text : text;
  if (!/\s/.test(t)) return null;
  const b = builder(t.length, src);
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (!(c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x2028 || c === 0x2029)) b.push(c, i, i + 1);
  }
  return b.view();
}

const B64 = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((ch, i) => (B64[ch.charCodeAt(0)] = i));
B64['-'.charCodeAt(0)] = 62;
B64['_'.charCodeAt(0)] = 63;

/** Base64 (standard or url-safe, padding optional) as Latin-1 text (so ASCII secrets read as themselves); undefined if it is not base64. */
export function decodeBase64(s: string): string | undefined {
  const body = s.replace(/=+$/, '');
  if (body.length % 4 === 1) return undefined;
  let out = '';
  let acc = 0;
  let bits = 0;
  const chunk: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    const v = c < 128 ? B64[c] : -1;
    if (v < 0) return undefined;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      chunk.push((acc >> bits) & 0xff);
      if (chunk.length === 8192) {
        out += String.fromCharCode(...chunk);
        chunk.length = 0;
      }
    }
  }
  return out + String.fromCharCode(...chunk);
}

/** Hex (even length) as Latin-1 text; undefined if it is not hex. */
export function decodeHex(s: string): string | undefined {
  if (s.length % 2) return undefined;
  let out = '';
  for (let i = 0; i < s.length; i += 2) {
    const hi = hex(s.charCodeAt(i));
    const lo = hex(s.charCodeAt(i + 1));
    if (hi < 0 || lo < 0) return undefined;
    out += String.fromCharCode(hi * 16 + lo);
  }
  return out;
}
