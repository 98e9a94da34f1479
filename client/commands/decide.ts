import type { Command } from 'commander';
import type { DecisionKind } from '../../common/decision';
import { isDuration } from '../../common/duration';
import { UsageError } from '../../common/errors';
import type { DecisionRequest, LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { escapeLine } from '../../common/terminal';
import { checkWaitToken } from '../wait-token';

export interface DecideOptions {
  by?: string;
  note?: string;
  reason?: string;
  guidance?: string;
  attempts?: string;
  tokens?: string;
  cost?: string;
  time?: string;
  verdict?: string;
  wait?: string;
  json?: boolean;
}

function wholeNumber(flag: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new UsageError(`${flag} must be a whole number from 1 to ${max}, not "${value}"`);
  return n;
}

/** Turns the flags of `approve|reject|retry|budget` into a decision, refusing what cannot work. */
export function decisionRequest(kind: DecisionKind, opts: DecideOptions): DecisionRequest {
  const by = opts.by?.trim();
  const verb = kind === 'extend' ? 'budget' : kind;
  if (!by) throw new UsageError(`${verb} needs --by NAME: decisions are recorded with who made them`);
  if (kind === 'approve') return { kind, by, note: opts.note };
  if (kind === 'reject') return { kind, by, reason: opts.reason };
  if (kind === 'audit') {
    const verdict = opts.verdict ?? 'ok';
    if (verdict !== 'ok' && verdict !== 'bad') throw new UsageError(`--verdict must be ok or bad, not "${verdict}"`);
    return { kind, by, verdict, note: opts.note };
  }
  if (kind === 'retry') {
    if (!opts.guidance?.trim())
      throw new UsageError('retry needs --guidance TEXT: it becomes feedback for the next attempt');
    return { kind, by, guidance: opts.guidance, attempts: wholeNumber('--attempts', opts.attempts ?? '1', 20)! };
  }
  const costUsd = opts.cost === undefined ? undefined : Number(opts.cost);
  if (costUsd !== undefined && !(Number.isFinite(costUsd) && costUsd > 0))
    throw new UsageError(`--cost must be a positive number of dollars, not "${opts.cost}"`);
  if (opts.time !== undefined && !isDuration(opts.time))
    throw new UsageError(`--time must be a duration such as 30m or 2h, not "${opts.time}"`);
  const request = {
    kind,
    by,
    attempts: wholeNumber('--attempts', opts.attempts, 100),
    tokens: wholeNumber('--tokens', opts.tokens, 1e9),
    costUsd,
    wallTime: opts.time,
    note: opts.note,
  };
  if ([request.attempts, request.tokens, request.costUsd, request.wallTime].every((v) => v === undefined)) {
    throw new UsageError('budget needs at least one of --attempts N, --tokens N, --cost USD, --time DURATION');
  }
  return request;
}

/** How a decision's author was established: `verified (key SHA256:…)` or `unverified (not signed)`. */
export function signedBy(entry: { verified?: boolean; fingerprint?: string }): string {
  return entry.verified
    ? `verified (key ${entry.fingerprint})`
    : 'unverified (not signed: set LOOPWRIGHT_SIGNING_KEY to sign)';
}

/** `approve|reject|retry|budget <id> --by NAME ...`: sends the decision and confirms it was applied. */
export async function decideCommand(
  client: LoopwrightClient,
  kind: DecisionKind,
  id: string,
  opts: DecideOptions,
  io: Output,
): Promise<number> {
  const entry = await client.decide(id, decisionRequest(kind, opts), {
    ...(opts.wait !== undefined ? { wait: checkWaitToken(opts.wait) } : {}),
  });
  if (opts.json) io.out(JSON.stringify(entry));
  else {
    io.out(escapeLine(id));
    io.out(
      `  ${kind === 'extend' ? 'budget extension' : kind} by ${escapeLine(entry.by)}: applied, ${signedBy(entry)}`,
    );
  }
  return 0;
}

/** `approve`, `reject`, `retry`, `budget` and `audit <id> --by NAME ...`: one decision each. */
export const decideDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  const decision = (
    kind: 'approve' | 'reject' | 'retry' | 'extend' | 'audit',
    about: string,
    extra: (c: Command) => Command,
  ) =>
    extra(
      program
        .command(`${kind === 'extend' ? 'budget' : kind} <id>`)
        .description(about)
        .requiredOption(
          '--by <name>',
          'who decides: recorded, and verified when the decision is signed (LOOPWRIGHT_SIGNING_KEY)',
        )
        .option(
          '--wait <token>',
          'decide only while the run still waits on what `loopwright review` showed (the token it prints)',
        )
        .option('--json', 'machine-readable output'),
    ).action(
      action(
        withClient(
          (client, id: string, opts) => decideCommand(client, kind, id, opts, io),
          (_id: string, opts) => {
            if (opts.wait !== undefined) checkWaitToken(opts.wait);
            return decisionRequest(kind, opts);
          },
        ),
      ),
    );
  decision('approve', 'accept the last candidate of a waiting run (recorded as a human override)', (c) =>
    c.option('--note <text>', 'a note for the record'),
  );
  decision('reject', 'end a waiting run as rejected', (c) => c.option('--reason <text>', 'why'));
  decision('retry', 'give a waiting run guidance and more attempts', (c) =>
    c
      .addOption(c.createOption('--guidance <text>', 'feedback for the next attempt').makeOptionMandatory())
      .option('--attempts <n>', 'attempts to grant', '1'),
  );
  decision('extend', "extend a waiting run's budget (recorded with who and how much)", (c) =>
    c
      .option('--attempts <n>', 'more attempts')
      .option('--tokens <n>', 'more tokens (input + output)')
      .option('--cost <usd>', 'more dollars')
      .option('--time <duration>', 'more active wall time, e.g. 30m')
      .option('--note <text>', 'a note for the record'),
  );
  decision('audit', 'record your audit of a completed run that needs one (L3 effects, audit samples)', (c) =>
    c.option('--verdict <ok|bad>', 'what you found', 'ok').option('--note <text>', 'a note for the record'),
  );
};
