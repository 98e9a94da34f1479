import { UsageError } from '../common/errors';
import { escapeLine } from '../common/terminal';

/**
 * Limits on what the CLI (and the webhook receiver) accepts, checked before anything is parsed
 * by zod or sent to Temporal. A run's input travels twice in its start payload (the task and the
 * input), so 512 KiB keeps a start far under Temporal's 2 MB blob limit.
 */
export const LIMITS = {
  /** Bytes of a loop or discovery input (`--input JSON`, `--input @file`, an event's input). */
  inputBytes: 512 * 1024,
  /** Nesting of arrays and objects in a JSON input. */
  jsonDepth: 64,
  /** Characters of any other argument or option value (a note, a guidance, a path). */
  argChars: 16 * 1024,
} as const;

/** `text` quoted for an error message: escaped (one line, inert) and cut to `max` characters. */
export function quote(text: string, max = 60): string {
  const shown = text.length > max ? `${text.slice(0, max)}…(${text.length} characters)` : text;
  return `"${escapeLine(shown)}"`;
}

/**
 * True when the arrays and objects of JSON `text` nest deeper than `max`. A scan without
 * recursion that skips strings, so a hostile input cannot exhaust the stack before JSON.parse
 * or a schema walks it. Brackets inside strings do not count; malformed JSON is left to JSON.parse.
 */
export function jsonTooDeep(text: string, max: number = LIMITS.jsonDepth): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Parses a JSON input after checking its size (at most LIMITS.inputBytes in UTF-8) and nesting
 * (at most LIMITS.jsonDepth): each failure is a one-line UsageError (exit 2) that names
 * `source` (`--input`, `input`) and `where` it came from (`the file x.json`), and ends in `hint`.
 */
export function parseJsonText(text: string, source: string, opts: { where?: string; hint?: string } = {}): unknown {
  const what = opts.where ?? source;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > LIMITS.inputBytes)
    throw new UsageError(
      `${what} is ${bytes} bytes: at most ${LIMITS.inputBytes} bytes (${LIMITS.inputBytes / 1024} KiB) are accepted`,
    );
  if (jsonTooDeep(text))
    throw new UsageError(
      `${what} nests arrays and objects more than ${LIMITS.jsonDepth} deep: at most ${LIMITS.jsonDepth} levels are accepted`,
    );
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const why = (err as Error).message.replace(/\s+/g, ' ').slice(0, 160);
    throw new UsageError(
      `${source} is not valid JSON (${opts.where ? `${opts.where}: ` : ''}${escapeLine(why)}): ${opts.hint ?? 'pass a JSON value'}`,
    );
  }
}

/** `bytes` decoded as UTF-8, or a UsageError when they are not valid UTF-8 (or too many to be an input). */
export function decodeUtf8(bytes: Uint8Array, source: string): string {
  if (bytes.length > LIMITS.inputBytes)
    throw new UsageError(
      `${source} is ${bytes.length} bytes: at most ${LIMITS.inputBytes} bytes (${LIMITS.inputBytes / 1024} KiB) are accepted`,
    );
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`${source} is not valid UTF-8: save it as UTF-8 text`);
  }
}

/** Lone UTF-16 surrogates (text that was not valid Unicode) and U+FFFD (what a decoder puts for bytes that were not valid UTF-8). */
const BROKEN_TEXT = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|\ufffd/;

/**
 * An argument or option value that is free text (a note, a reason, a path): at most
 * LIMITS.argChars characters, no NUL or other C0 control but newline and tab, and no broken
 * Unicode. Else a one-line UsageError naming `what`.
 */
export function checkArgText(what: string, value: string, max: number = LIMITS.argChars): string {
  if (value.length > max)
    throw new UsageError(`${what} is ${value.length} characters long: at most ${max} are accepted`);
  const control = /[\x00-\x08\x0b-\x1f\x7f]/.exec(value);
  if (control)
    throw new UsageError(
      `${what} has a control character (${escapeLine(control[0])} at position ${control.index + 1}): use printable text`,
    );
  const broken = BROKEN_TEXT.exec(value);
  if (broken)
    throw new UsageError(
      `${what} is not valid Unicode text (${escapeLine(`\\u${broken[0].charCodeAt(0).toString(16)}`)} at position ${broken.index + 1}): pass UTF-8 text`,
    );
  return value;
}

/** True when `text` holds a lone surrogate or U+FFFD (see {@link checkArgText}). */
export function isBrokenText(text: string): boolean {
  return BROKEN_TEXT.test(text);
}

/** A whole number from `min` to `max` as an option gives it (`--limit 10`), else a one-line UsageError. */
export function wholeNumberOpt(flag: string, value: string, min: number, max: number): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, not ${quote(value)}`);
  return n;
}

/**
 * An input given as a value (an event's input from a webhook, a script's call of the client):
 * at most LIMITS.inputBytes as JSON and nested at most LIMITS.jsonDepth, else a one-line
 * UsageError naming `source`.
 */
export function checkInputValue(value: unknown, source: string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    throw new UsageError(
      `${source} cannot be written as JSON (it is circular or nested too deep): pass a plain JSON value`,
    );
  }
  if (text === undefined) return value;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > LIMITS.inputBytes)
    throw new UsageError(
      `${source} is ${bytes} bytes as JSON: at most ${LIMITS.inputBytes} bytes (${LIMITS.inputBytes / 1024} KiB) are accepted`,
    );
  if (jsonTooDeep(text))
    throw new UsageError(
      `${source} nests arrays and objects more than ${LIMITS.jsonDepth} deep: at most ${LIMITS.jsonDepth} levels are accepted`,
    );
  return value;
}

/** A port option: a whole number from 0 to 65535 (0: a free one), else a one-line UsageError. */
export function portOpt(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`${quote(value)} is not a port number: give 0-65535`);
  return n;
}
