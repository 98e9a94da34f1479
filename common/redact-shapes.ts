/**
 * Known credential shapes broken up to slip past a pattern: `sk-ant- api03-…` split by a space,
 * `ghp_0123-4567-…` by dashes, a token wrapped over two lines. From each prefix the walk joins
 * the body's pieces across short separators while the next piece still looks like part of a
 * token (digits, mixed case, or long), so the prose after a key is not swallowed. Linear: each
 * walk is bounded by the shape's length.
 */
import { SHAPES, type Span } from './redact-patterns';

const atoms = (source: string) => source.match(/\[[^\]]*\]|\(\?:[^)]*\)|\\.|./g) ?? [];
/** Each shape's prefix, allowing up to two spaces or a line break between its characters. */
const PREFIXES = SHAPES.map((shape) => ({
  shape,
  re: new RegExp(atoms(shape.prefix.source).join('(?:[ \\t]{1,2}|\\r?\\n)?'), 'g'),
}));
const WORD = /[A-Za-z0-9_]/;
const SEPARATOR = /[ \t\r\n.\-\u00a0]/;

/** Whether a piece looks like part of a token: letters with digits, or mixed case (a word of prose does not). */
function tokenish(piece: string): boolean {
  return (/\d/.test(piece) && /[A-Za-z]/.test(piece)) || /^\d+$/.test(piece) || /[a-z][A-Z]|[A-Z]{2}[a-z]/.test(piece);
}

/** Spans of known shapes in `text` whose body is broken by separators (or not: the raw patterns find those too). */
export function shapeSpans(text: string, spans: Span[] = []): Span[] {
  for (const { shape, re } of PREFIXES) {
    for (const m of text.matchAll(re)) {
      const start = m.index!;
      if (start > 0 && WORD.test(text.charAt(start - 1))) continue;
      const end = walk(text, start + m[0].length, shape.body, shape.min, shape.max);
      if (end > 0) spans.push([start, end]);
    }
  }
  return spans;
}

/** Where the body that starts at `i` ends in `text`, or -1 when it is shorter than `min`. */
function walk(text: string, i: number, body: RegExp, min: number, max: number): number {
  let length = 0;
  let last = 0;
  let end = -1;
  let pos = i;
  let lastSep = '';
  while (pos < text.length && length < max) {
    const pieceStart = pos;
    while (pos < text.length && length < max && body.test(text.charAt(pos))) {
      pos++;
      length++;
    }
    if (pos > pieceStart) {
      last = pos - pieceStart;
      end = pos;
    }
    if (length >= max) break;
    // A short separator (up to 6 characters, one line break at most), then the next piece.
    let s = pos;
    let breaks = 0;
    while (s < text.length && s - pos < 6 && SEPARATOR.test(text.charAt(s)) && !body.test(text.charAt(s)))
      if (text[s++] === '\n') breaks++;
    if (s === pos || breaks > 1) break;
    let e = s;
    while (e < text.length && e - s < max && body.test(text.charAt(e))) e++;
    const next = text.slice(s, e);
    if (!next) break;
    const sep = text.slice(pos, s);
    // Single characters apart (`a b c`), or groups of one length between the same separator (`0123-4567-89ab`).
    const regular = next.length === last && sep === lastSep;
    const spaced = last === 1 && next.length === 1;
    const short = length < min && (next.length >= 16 || tokenish(text.slice(i, pos)));
    if (!(length === 0 || spaced || regular || tokenish(next) || short)) break;
    lastSep = sep;
    pos = s;
  }
  return length >= min ? end : -1;
}
