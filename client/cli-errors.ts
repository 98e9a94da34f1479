import type { Command, CommanderError } from 'commander';
import { escapeLine } from '../common/terminal';
import type { Output } from './output';
import { serviceError, type ServiceContext } from './service-errors';

/** Characters of an error line at most; longer messages are cut in the middle. */
export const MAX_ERROR_LINE = 1000;

/**
 * Commander set up so that every usage error it finds (unknown command or option, missing
 * argument or option value, excess arguments) throws a CommanderError and prints nothing: the
 * CLI prints it as one `error:` line (see {@link errorLine}). Help asked for (`--help`,
 * `help`) is printed to stdout. Subcommands made after this inherit it.
 */
export function configureCommanderErrors(program: Command, io: Output): Command {
  return program
    .exitOverride()
    .showHelpAfterError(false)
    .showSuggestionAfterError(true)
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: () => undefined, outputError: () => undefined });
}

/** Commander's errors, by their `commander.*` code (commander is ESM to some loaders: no instanceof). */
function isCommanderError(err: unknown): err is CommanderError {
  const e = err as { code?: unknown; exitCode?: unknown };
  return (
    err instanceof Error &&
    typeof e.code === 'string' &&
    e.code.startsWith('commander.') &&
    typeof e.exitCode === 'number'
  );
}

/** True when LOOPWRIGHT_DEBUG asks for stacks of unexpected errors (1, true, yes). */
export function debugEnabled(env: Record<string, string | undefined>): boolean {
  return /^(1|true|yes)$/i.test(env.LOOPWRIGHT_DEBUG?.trim() ?? '');
}

/** `text` on one line, inert, and at most MAX_ERROR_LINE characters. */
function oneLine(text: string): string {
  const line = escapeLine(text);
  if (line.length <= MAX_ERROR_LINE) return line;
  return `${line.slice(0, MAX_ERROR_LINE - 300)} …(${line.length - MAX_ERROR_LINE + 200} characters left out)… ${line.slice(-100)}`;
}

/**
 * What the CLI prints for an error and the exit code, or undefined for a CommanderError that
 * is not an error (help or version shown). Always one line starting `error: `:
 * - commander's usage errors: exit 2 (its "Did you mean" suggestion on the same line);
 * - LoopwrightError: its message and its exitCode (2 for the user's input or configuration);
 * - Temporal and gRPC errors: mapped by client/service-errors.ts;
 * - anything else is an internal fault: exit 1, the message only; with LOOPWRIGHT_DEBUG=1 the
 *   stack follows on the lines after it.
 */
export function errorLine(
  err: unknown,
  ctx: ServiceContext,
  env: Record<string, string | undefined>,
): { lines: string[]; code: number } | undefined {
  if (isCommanderError(err)) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return undefined;
    if (err.code === 'commander.help' && err.exitCode === 0) return undefined;
    // `loopwright` or `loopwright schedule` with no command: commander shows help as an error.
    const message =
      err.code === 'commander.help'
        ? 'no command given: run with --help to see the commands'
        : err.message.replace(/^error: /, '').replace(/\n\(Did you mean/g, ' (Did you mean');
    return { lines: [`error: ${oneLine(message)}`], code: 2 };
  }
  const known = serviceError(err, ctx);
  if (known) return { lines: [`error: ${oneLine(known.message)}`], code: known.exitCode };
  const message = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  const debug = debugEnabled(env) && err instanceof Error && err.stack ? err.stack.split('\n').slice(1) : [];
  const hint = debug.length ? '' : ' (set LOOPWRIGHT_DEBUG=1 to see where)';
  return { lines: [`error: internal error: ${oneLine(message)}${hint}`, ...debug], code: 1 };
}
