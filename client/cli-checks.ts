import type { Command } from 'commander';
import { metricsAddress } from '../common/config';
import { parseDuration } from '../common/duration';
import { UsageError } from '../common/errors';
import { RUN_STATES, type RunState } from '../common/run-record';
import { requireOneLine } from '../common/terminal';
import { getLoop } from '../loops';
import { parseInputArg } from './commands/run';
import { validateEventKey } from './events';
import { checkId, checkLookupId, checkName } from './ids';
import { checkArgText, LIMITS, portOpt as numberOpt, quote, wholeNumberOpt } from './prechecks';

/** The longest duration any option takes (`--since`, `--every`, `--time`...): ten years. */
export const MAX_DURATION_MS = 3650 * 86_400_000;

/** A duration option (`30m`, `7d`): above zero and at most MAX_DURATION_MS, else a one-line UsageError. */
export function durationOpt(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || !(ms > 0))
    throw new UsageError(`${flag} must be a duration such as 30m, 12h or 7d, not ${quote(value)}`);
  if (ms > MAX_DURATION_MS) throw new UsageError(`${flag} ${quote(value)} is longer than 3650d, the longest accepted`);
  return ms;
}

type Check = (flag: string, value: string, command: Command) => unknown;

const harnessVersion: Check = (_flag, v) => {
  if (!/^v?\d{1,6}$/.test(v) || Number(v.replace(/^v/, '')) < 1)
    throw new UsageError(`${quote(v)} is not a harness version: give e.g. 2 or v2`);
};
const oneLineText: Check = (flag, v) => requireOneLine(flag, checkArgText(flag, v));
const host: Check = (flag, v) => {
  if (!/^[A-Za-z0-9.:[\]-]{1,255}$/.test(v))
    throw new UsageError(`${flag} ${quote(v)} is not a host: give an IP address or a host name, e.g. 127.0.0.1`);
};
const number: (min: number, max: number, below?: boolean) => Check = (min, max, below) => (flag, v) => {
  const n = /^\s*[0-9.]+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < min || (below ? n >= max : n > max))
    throw new UsageError(`${flag} must be a number from ${min} to ${below ? `below ${max}` : max}, not ${quote(v)}`);
};

/**
 * Checks by option (commander's camelCase name) and by argument name, the same for every
 * command that has them: so `--id`, `--input`, `--port` or `<loop>` mean one thing and are
 * refused the same way everywhere, before the command connects to anything.
 */
const OPTION_CHECKS: Record<string, Check> = {
  input: (_flag, v) => parseInputArg(v),
  // `run --id` names a run, `schedule create --id` a schedule.
  id: (_flag, v, command) => checkId(command.parent?.name() === 'schedule' ? 'schedule id' : 'run id', v),
  fromRun: (flag, v) => checkLookupId(flag, v),
  key: (_flag, v) => validateEventKey(v),
  by: (flag, v) => checkName(flag, v),
  // A filter: runs may carry a loop name that is no longer built in (client/visibility-query.ts escapes it).
  loop: (flag, v) => checkId(flag, v),
  state: (_flag, v) => {
    if (!RUN_STATES.includes(v as RunState))
      throw new UsageError(`unknown state ${quote(v)}: use one of ${RUN_STATES.join(', ')}`);
  },
  port: (_flag, v) => numberOpt(v),
  uiPort: (_flag, v) => numberOpt(v),
  httpPort: (_flag, v) => numberOpt(v),
  metricsPort: (_flag, v) => numberOpt(v),
  codecPort: (_flag, v) => numberOpt(v),
  metrics: (flag, v) => metricsAddress(v, flag),
  host,
  limit: (flag, v) => wholeNumberOpt(flag, v, 1, 10_000),
  attempt: (flag, v) => wholeNumberOpt(flag, v, 1, 10_000),
  attempts: (flag, v) => wholeNumberOpt(flag, v, 1, 100),
  tokens: (flag, v) => wholeNumberOpt(flag, v, 1, 1e9),
  minOccurrences: (flag, v) => wholeNumberOpt(flag, v, 2, 1000),
  repeats: (flag, v) => wholeNumberOpt(flag, v, 1, 20),
  heldOut: number(0, 1, true),
  cost: number(0, 1e6),
  every: durationOpt,
  since: durationOpt,
  reviewTimeout: durationOpt,
  time: durationOpt,
  level: (flag, v) => {
    if (!/^[Ll][123]$/.test(v)) throw new UsageError(`${flag} must be L1, L2 or L3, not ${quote(v)}`);
  },
  verdict: (flag, v) => {
    if (v !== 'ok' && v !== 'bad') throw new UsageError(`${flag} must be ok or bad, not ${quote(v)}`);
  },
  to: harnessVersion,
  cron: oneLineText,
  file: oneLineText,
  out: oneLineText,
  db: oneLineText,
  script: oneLineText,
  log: oneLineText,
  token: oneLineText,
  allowOrigin: oneLineText,
};

/** Checks of positional arguments by their name in the command's usage (`run <loop>`, `status <id>`). */
const ARGUMENT_CHECKS: Record<string, Check> = {
  loop: (_name, v) => getLoop(v),
  id: (_name, v) => checkLookupId('id', v),
  file: oneLineText,
  version: harnessVersion,
  from: harnessVersion,
  to: harnessVersion,
};

/**
 * Runs before every command's action (commander's preAction hook): every argument and option
 * value is at most LIMITS.argChars characters of valid Unicode text without control characters
 * (newline and tab allowed in free text such as --note), and those with a known name pass their
 * check in OPTION_CHECKS / ARGUMENT_CHECKS. The first failure is a one-line UsageError (exit 2):
 * nothing has connected to Temporal or started yet.
 */
export function precheckCommand(command: Command): void {
  command.registeredArguments.forEach((arg, i) => {
    const value: unknown = command.processedArgs[i];
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v !== 'string') continue;
      const name = `<${arg.name()}>`;
      // The named check first: its message is the more precise one.
      ARGUMENT_CHECKS[arg.name()]?.(name, v, command);
      checkArgText(name, v);
    }
  });
  const opts = command.opts();
  for (const option of command.options) {
    const key = option.attributeName();
    const value: unknown = opts[key];
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v !== 'string') continue;
      const flag = option.long ?? option.short ?? key;
      OPTION_CHECKS[key]?.(flag, v, command);
      // The input is JSON and has limits of its own (client/prechecks.ts).
      if (key !== 'input') checkArgText(flag, v, LIMITS.argChars);
    }
  }
}
