/**
 * Normalised views of a text for redaction (common/redact.ts): the same text with invisible
 * characters dropped and `%XX` decoded, with spaced-out characters joined, without whitespace;
 * and decoders for base64 and hex runs. A view remembers, for each of its characters, which
 * characters of the original it came from, so a secret found in a view is redacted where it
 * stands in the original. Pure and linear.
 */
import { must } from './must';
import type { Span } from './redact-patterns';

/** A derived text and, per character, the `[from, to)` of the original characters it stands for. */
export interface View {
  text: string;
  from: Int32Array;
  to: Int32Array;
}

/** Zero-width and invisible characters: soft hyphen, joiners, marks, bidi controls, word joiner, BOM, fillers, variation selectors. */
export const INVISIBLE =
  /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u3164\uFE00-\uFE0F\uFEFF\uFFA0]/;
/** Escapes {@link normalised} decodes: `%XX`, `&#…;`, `&name;`, `\xHH`, `\uHHHH`. */
const ESCAPE = /%[0-9A-Fa-f]{2}|&#|&[A-Za-z]{2,8};|\\[xu]/;
/** Whether {@link normalised} would read `t` differently (each test native and linear; NFKD covers marks and compatibility forms). */
function needsView(t: string): boolean {
  if (ESCAPE.test(t)) return true;
  if (!/[^\x00-\x7f]/.test(t)) return false;
  return INVISIBLE.test(t) || LOOKALIKE.test(t) || t.normalize('NFKD') !== t;
}

/** Maps a span of `view` back to the original text. */
export function toOriginal(view: View, [s, e]: Span): Span {
  // A span found in the view is non-empty and inside it: 0 <= s < e <= view.text.length.
  return [must(view.from[s], 'a span starts inside its view'), must(view.to[e - 1], 'a span ends inside its view')];
}

function hex(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** A view builder over `src` (whose own map, if any, is composed in); it grows as needed (a ligature folds to two letters). */
function builder(n: number, src: View | null) {
  let codes = new Uint16Array(n + 16);
  let from = new Int32Array(n + 16);
  let to = new Int32Array(n + 16);
  let len = 0;
  return {
    push(code: number, start: number, end: number) {
      if (len === codes.length) {
        const grow = <T extends Uint16Array | Int32Array>(a: T): T => {
          const b = new (a.constructor as new (n: number) => T)(a.length * 2);
          b.set(a);
          return b;
        };
        codes = grow(codes);
        from = grow(from);
        to = grow(to);
      }
      codes[len] = code;
      // The builder walks src.text, so start < end <= src.text.length.
      from[len] = src ? must(src.from[start], 'a pushed character starts inside its source') : start;
      to[len] = src ? must(src.to[end - 1], 'a pushed character ends inside its source') : end;
      len++;
    },
    view(): View {
      let text = '';
      for (let i = 0; i < len; i += 8192) text += String.fromCharCode(...codes.subarray(i, Math.min(len, i + 8192)));
      return { text, from: from.subarray(0, len), to: to.subarray(0, len) };
    },
  };
}

/** HTML's named character references that can spell a secret's characters. */
const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  sol: '/',
  bsol: '\\',
  colon: ':',
  semi: ';',
  comma: ',',
  period: '.',
  equals: '=',
  plus: '+',
  minus: '-',
  hyphen: '-',
  dash: '-',
  lowbar: '_',
  num: '#',
  percnt: '%',
  excl: '!',
  quest: '?',
  commat: '@',
  dollar: '$',
  ast: '*',
  lpar: '(',
  rpar: ')',
  tilde: '~',
  grave: '`',
  nbsp: ' ',
  Tab: '\t',
  NewLine: '\n',
};

/**
 * Cyrillic and Greek letters that look like Latin ones, folded to the Latin letter of the same case
 * (NFKD already folds fullwidth, circled and mathematical letters).
 */
const LOOKALIKES: Record<string, string> = Object.fromEntries(
  [
    ['a', 'аα'],
    ['A', 'АΑ'],
    ['B', 'ВΒ'],
    ['c', 'сϲ'],
    ['C', 'СϹ'],
    ['d', 'ԁ'],
    ['e', 'еє'],
    ['E', 'ЕΕ'],
    ['H', 'НΗ'],
    ['i', 'іι'],
    ['I', 'ІΙӀ'],
    ['j', 'ј'],
    ['J', 'Ј'],
    ['k', 'κ'],
    ['K', 'КΚ'],
    ['M', 'МΜ'],
    ['N', 'Ν'],
    ['o', 'оο'],
    ['O', 'ОΟ'],
    ['p', 'рρ'],
    ['P', 'РΡ'],
    ['s', 'ѕ'],
    ['S', 'Ѕ'],
    ['T', 'ТΤ'],
    ['x', 'хχ'],
    ['X', 'ХΧ'],
    ['y', 'у'],
    ['Y', 'ҮΥ'],
    ['Z', 'Ζ'],
  ].flatMap(([latin = '', alikes = '']) /* every row is [latin, look-alikes] */ => [...alikes].map((c) => [c, latin])),
);

const LOOKALIKE = new RegExp(`[${Object.keys(LOOKALIKES).join('')}]`);

const folds = new Map<number, string>();
/**
 * What a character outside ASCII reads as: `''` for an invisible character or a combining mark,
 * its ASCII compatibility form (NFKD without marks: fullwidth `ｇ`, `𝐠`, `é`), its Latin look-alike,
 * or itself.
 */
function fold(cp: number): string {
  let out = folds.get(cp);
  if (out === undefined) {
    const ch = String.fromCodePoint(cp);
    if (INVISIBLE.test(ch) || /^\p{M}$/u.test(ch)) out = '';
    else {
      const plain = ch.normalize('NFKD').replace(/\p{M}/gu, '');
      out = plain.length > 0 && plain.length <= 4 && /^[\x20-\x7e]+$/.test(plain) ? plain : (LOOKALIKES[ch] ?? ch);
    }
    if (folds.size < 65_536) folds.set(cp, out);
  }
  return out;
}

/**
 * `text` as a reader (or a decoder) would take it: invisible characters and combining marks
 * dropped, compatibility forms and Latin look-alikes folded to ASCII, and escapes decoded: `%XX`,
 * HTML's `&#NN;`, `&#xHH;` and named references, `\xHH`, `\uHHHH` and `\u{H…}`. Three passes, for
 * escapes of escapes (`%25XX`, `&amp;#…`). Null when nothing changes.
 */
export function normalised(text: string): View | null {
  let view: View | null = null;
  for (let pass = 0; pass < 3; pass++) {
    const t = view ? view.text : text;
    if (!needsView(t)) break;
    const b = builder(t.length, view);
    const push = (s: string, start: number, end: number) => {
      for (let k = 0; k < s.length; k++) b.push(s.charCodeAt(k), start, end);
    };
    let changed = false;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      const escaped = c === 37 || c === 38 || c === 92 ? unescapeAt(t, i) : undefined;
      if (escaped) {
        push(escaped.text, i, i + escaped.length);
        i += escaped.length - 1;
        changed = true;
      } else if (c < 0x80) b.push(c, i, i + 1);
      else {
        const cp = t.codePointAt(i)!;
        const width = cp > 0xffff ? 2 : 1;
        const folded = fold(cp);
        if (folded.length === width && folded.codePointAt(0) === cp) push(folded, i, i + width);
        else {
          changed = true;
          push(folded, i, i + width);
        }
        i += width - 1;
      }
    }
    if (!changed) break;
    view = b.view();
  }
  return view;
}

/** The escape at `t[i]` (`%`, `&` or `\\`): the text it stands for and how many characters it takes; undefined if there is none. */
function unescapeAt(t: string, i: number): { text: string; length: number } | undefined {
  const c = t.charCodeAt(i);
  if (c === 37) {
    const hi = hex(t.charCodeAt(i + 1));
    const lo = hex(t.charCodeAt(i + 2));
    return hi >= 0 && lo >= 0 ? { text: String.fromCharCode(hi * 16 + lo), length: 3 } : undefined;
  }
  if (c === 38) {
    const m = /^&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z]{2,8}));/.exec(t.slice(i, i + 11));
    if (!m) return undefined;
    const entity = m[3] && ENTITIES[m[3]];
    if (m[3]) return entity !== undefined ? { text: entity, length: m[0].length } : undefined;
    // One of the three alternatives matched: a decimal (group 1), a hex (group 2) or a name (group 3).
    return codePoint(m[1] ? parseInt(m[1], 10) : parseInt(must(m[2], 'a hex reference'), 16), m[0].length);
  }
  const m = /^\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|u\{([0-9A-Fa-f]{1,6})\})/.exec(t.slice(i, i + 10));
  return m
    ? codePoint(parseInt(must(m[1] ?? m[2] ?? m[3], 'one escape alternative matched'), 16), m[0].length)
    : undefined;
}

function codePoint(cp: number, length: number): { text: string; length: number } | undefined {
  return cp > 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff)
    ? { text: String.fromCodePoint(cp), length }
    : undefined;
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

/** `src` with only its ASCII letters and digits (a secret split by punctuation, dashes or spaces), for literal values only. Null when nothing is dropped. */
export function alnumOnly(src: View | null, text: string, values: string[]): View | null {
  const t = src ? src.text : text;
  if (!/[^A-Za-z0-9]/.test(t)) return null;
  // The mapped view is built only when a value is there (a native pass finds out first).
  const bare = t.replace(/[^A-Za-z0-9]+/g, '');
  if (!values.some((v) => bare.includes(v))) return null;
  const b = builder(t.length, src);
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) b.push(c, i, i + 1);
  }
  return b.view();
}

const B64 = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  .split('')
  .forEach((ch, i) => (B64[ch.charCodeAt(0)] = i));
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
    const v = c < 128 ? (B64[c] ?? -1) : -1;
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
