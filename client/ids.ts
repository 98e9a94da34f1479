import { UsageError } from '../common/errors';
import { requireOneLine } from '../common/terminal';
import { isBrokenText, quote } from './prechecks';

/** Characters of an id a user makes (`run --id`, `schedule create --id`). */
export const MAX_ID_LENGTH = 200;
/**
 * Characters of an id a user looks up (`status <id>`): ids Loopwright makes can be longer than
 * MAX_ID_LENGTH (an event's `<loop>/<key>`, an evaluation run's `<id>/eval/...`); Temporal's
 * own limit is 1000.
 */
export const MAX_LOOKUP_ID_LENGTH = 1000;

/**
 * Whitespace other than a plain space, format characters (zero-width, bidi, soft hyphen, BOM),
 * private-use characters and noncharacters: an id holding one can look like another id, or
 * like nothing at all.
 */
const ODD = /[\p{Cf}\p{Co}\p{Zl}\p{Zp}\ufdd0-\ufdef\ufffe\uffff]|(?! )\p{White_Space}/u;

/**
 * The one check of an id a user gives (a run id, a schedule id, a `--from-run`): non-empty, at
 * most `max` characters (MAX_ID_LENGTH for a new id), one line of printable text without
 * leading or trailing space, control, invisible or odd Unicode characters. Else a one-line
 * UsageError (exit 2) that names `what`; nothing has been sent anywhere yet.
 */
export function checkId(what: string, id: string, max: number = MAX_ID_LENGTH): string {
  if (id.length === 0) throw new UsageError(`${what} is empty: give an id such as my-loop/issue-42`);
  if (id.length > max) throw new UsageError(`${what} is ${id.length} characters long: at most ${max} are allowed`);
  requireOneLine(what, id);
  if (id.trim() !== id) throw new UsageError(`${what} ${quote(id)} starts or ends with a space: remove it`);
  if (isBrokenText(id))
    throw new UsageError(`${what} ${quote(id)} is not valid Unicode text (it was not UTF-8): use printable text`);
  const odd = ODD.exec(id);
  if (odd)
    throw new UsageError(
      `${what} ${quote(id)} has an invisible or unusual character (\\u${odd[0].codePointAt(0)!.toString(16).padStart(4, '0')} at position ${odd.index + 1}): use letters, digits and punctuation`,
    );
  return id;
}

/** An id to look up (`status`, `trace`, `approve`, `cancel`...): as {@link checkId}, up to MAX_LOOKUP_ID_LENGTH characters. */
export function checkLookupId(what: string, id: string): string {
  return checkId(what, id, MAX_LOOKUP_ID_LENGTH);
}

/** A person's name (`--by`): trimmed, non-empty, at most 200 characters of one printable line. */
export function checkName(what: string, name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw new UsageError(`${what} is empty: give your name, e.g. --by alice`);
  return checkId(what, trimmed);
}
