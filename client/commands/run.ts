import { readFileSync } from 'node:fs';
import { UsageError } from '../../common/errors';
import { redactDeep } from '../../common/redact';
import { escapeLine, terminalJson } from '../../common/terminal';
import type { LoopwrightClient } from '../loopwright-client';
import { progressLine, summarize, type Output } from '../output';

/** Parses `--input`: inline JSON, or `@path` to a JSON file. */
export function parseInputArg(arg: string | undefined): unknown {
  if (arg === undefined) throw new UsageError('missing --input: pass the loop input as JSON or @file');
  let text = arg;
  if (arg.startsWith('@')) {
    try {
      text = readFileSync(arg.slice(1), 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read input file ${arg.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const why = (err as Error).message.replace(/\s+/g, ' ').slice(0, 160);
    const source = arg.startsWith('@') ? `the file ${arg.slice(1)}` : '--input';
    throw new UsageError(`--input is not valid JSON (${source}: ${why}): pass JSON or @file`);
  }
}

/**
 * `run <loop> --input JSON|@file [--id ID] [--wait] [--json]`. Prints the workflow id first.
 * With --wait: exit 0 when the run completes, 3 when it ends or waits in any other state.
 */
export async function runCommand(
  client: LoopwrightClient,
  loop: string,
  opts: { input?: string; id?: string; wait?: boolean; json?: boolean },
  io: Output,
): Promise<number> {
  const input = parseInputArg(opts.input);
  const { workflowId } = await client.run(loop, input, { id: opts.id, trigger: { kind: 'cli' } });
  if (!opts.wait) {
    io.out(opts.json ? terminalJson({ workflowId }) : escapeLine(workflowId));
    return 0;
  }
  if (!opts.json) io.out(escapeLine(workflowId));
  const record = await client.wait(workflowId, opts.json ? undefined : (r) => io.err(progressLine(r)), (e) => io.err(`  waiting: ${e.message}`));
  if (opts.json) io.out(terminalJson(redactDeep(record, client.redaction), 2));
  else summarize(record, client.redaction).slice(1).forEach((l) => io.out(l));
  return record.state === 'completed' ? 0 : 3;
}
