import { UsageError } from './errors';

/**
 * Output hygiene: a run's data (a candidate, a reason, evidence, an id, a `by`) is untrusted
 * text, and text printed to a terminal or written to a file someone `cat`s can drive the
 * terminal. These helpers render such text inert: every character that can control a terminal
 * or make text read differently from what it is, is shown as a visible escape instead
 * (`\x1b`, `\r`, `\n`, `\u202e`).
 *
 * The characters escaped:
 * - the C0 controls U+0000–U+001F (ESC starts every CSI and OSC sequence: colours, cursor
 *   moves, `ESC]8;;url` hyperlinks, `ESC]0;` window titles, `ESC]52;` clipboard writes; CR and
 *   backspace rewrite what is already on the line; a newline starts a line the reader takes
 *   for the program's own). A multi-line block keeps newline and tab;
 * - DEL U+007F and the C1 controls U+0080–U+009F (U+009B is a one-byte CSI to some terminals);
 * - the Arabic letter mark, the left-to-right and right-to-left marks, the line and paragraph
 *   separators, and the bidirectional embeddings, overrides and isolates U+202A–U+202E and
 *   U+2066–U+2069 (Trojan Source).
 */
const UNSAFE_LINE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** {@link UNSAFE_LINE} but newline and tab. */
const UNSAFE_BLOCK = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** What `JSON.stringify` leaves raw of {@link UNSAFE_LINE}: it escapes only U+0000–U+001F. */
const UNSAFE_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const hex = (c: string, width: number) => c.charCodeAt(0).toString(16).padStart(width, '0');
const visible = (c: string) => SHORT[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`);

/**
 * A single-line field (a name, an id, a `by`, a reason printed on one line, a table cell) made
 * inert: every control, separator and bidi character, newline and tab included, shown as an
 * escape (`\n`, `\t`, `\r`, `\x1b`, `\x9b`, `\u202e`), so the field can neither drive the
 * terminal nor start a line of its own.
 */
export function escapeLine(text: string): string {
  return text.replace(UNSAFE_LINE, visible);
}

/**
 * A multi-line block (a candidate's body, evidence, a diff, a Markdown report) made inert: as
 * {@link escapeLine}, but newlines and tabs are kept. A CR that ends a line (`\r\n`) is a line
 * ending and is dropped; every other CR is shown as `\r`, so no line can overwrite another.
 */
export function escapeBlock(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE_BLOCK, visible);
}

/**
 * `JSON.stringify(value, null, indent)` that is also safe to print: the same JSON (it parses to
 * the same value), with the characters `JSON.stringify` leaves raw (DEL, C1, separators, bidi)
 * written as `\uXXXX`. They can only occur inside strings, where the escape means the same.
 */
export function terminalJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(UNSAFE_JSON, (c) => `\\u${hex(c, 4)}`);
}

/**
 * What a name or an id may not hold: what {@link escapeLine} escapes, and the invisible
 * characters that would let two ids look the same (zero-width space, non-joiner and joiner, word
 * joiner, invisible operators, BOM); common/decision.ts refuses the same kinds in a `by`.
 */
const UNPRINTABLE_NAME = /[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/;
const UNPRINTABLE_GLOBAL = new RegExp(UNPRINTABLE_NAME.source, 'g');

/** The first character of `text` that a name or an id may not hold (see UNPRINTABLE_NAME), with its index, or undefined. */
export function firstUnprintable(text: string): { char: string; index: number } | undefined {
  const m = UNPRINTABLE_NAME.exec(text);
  return m ? { char: m[0], index: m.index } : undefined;
}

/**
 * `value` when it is one line of printable text; else a UsageError (exit 2) in one line that
 * names the field and the first offending character: `run id "a\nb" has a control or
 * invisible character (\n at position 2): ...`. For names and ids that are printed, listed and
 * kept in histories. Positions count UTF-16 code units from 1.
 */
export function requireOneLine(what: string, value: string): string {
  const bad = firstUnprintable(value);
  if (bad)
    throw new UsageError(
      `${what} "${escapeLine(value).replace(UNPRINTABLE_GLOBAL, visible)}" has a control or invisible character (${visible(bad.char)} at position ${bad.index + 1}): use one line of printable text`,
    );
  return value;
}
