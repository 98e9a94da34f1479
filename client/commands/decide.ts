import type { DecisionKind } from '../../common/decision';
import { UsageError } from '../../common/errors';
import type { DecisionRequest, LoopwrightClient } from '../loopwright-client';
import type { Output } from '../output';

export interface DecideOptions {
  by?: string;
  note?: string;
  reason?: string;
  guidance?: string;
  attempts?: string;
  json?: boolean;
}

function request(kind: DecisionKind, opts: DecideOptions): DecisionRequest {
  const by = opts.by?.trim();
  if (!by) throw new UsageError(`${kind} needs --by NAME: decisions are recorded with who made them`);
  if (kind === 'approve') return { kind, by, note: opts.note };
  if (kind === 'reject') return { kind, by, reason: opts.reason };
  if (!opts.guidance?.trim()) throw new UsageError('retry needs --guidance TEXT: it becomes feedback for the next attempt');
  const attempts = opts.attempts === undefined ? 1 : Number(opts.attempts);
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > 20) throw new UsageError(`--attempts must be a whole number from 1 to 20, not "${opts.attempts}"`);
  return { kind, by, guidance: opts.guidance, attempts };
}

/** `approve|reject|retry <id> --by NAME ...`: sends the decision and confirms it was applied. */
export async function decideCommand(client: LoopwrightClient, kind: DecisionKind, id: string, opts: DecideOptions, io: Output): Promise<number> {
  const entry = await client.decide(id, request(kind, opts));
  if (opts.json) io.out(JSON.stringify(entry));
  else {
    io.out(id);
    io.out(`  ${kind} by ${entry.by}: applied`);
  }
  return 0;
}
