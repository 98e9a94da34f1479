import { closeSync, openSync, readSync } from 'node:fs';
import { UsageError } from '../../common/errors';
import { redactDeep } from '../../common/redact';
import { escapeLine, terminalJson } from '../../common/terminal';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import { progressLine, summarize, type Output } from '../output';
import { decodeUtf8, LIMITS, parseJsonText } from '../prechecks';

/** At most `max + 1` bytes of the file at `file` (so a larger one is seen as such without reading it all, /dev/zero included). */
function readBounded(file: string, max: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, max + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > max) break;
    }
    return Buffer.concat(chunks);
  } finally {
    closeSync(fd);
  }
}

/**
 * Parses `--input`: inline JSON, or `@path` to a JSON file (UTF-8). Refused with a one-line
 * UsageError (exit 2): a missing value, a file that cannot be read, over LIMITS.inputBytes,
 * not UTF-8, nested deeper than LIMITS.jsonDepth or not JSON (see client/prechecks.ts).
 */
export function parseInputArg(arg: string | undefined): unknown {
  if (arg === undefined) throw new UsageError('missing --input: pass the loop input as JSON or @file');
  const hint = 'pass JSON or @file';
  if (!arg.startsWith('@')) return parseJsonText(arg, '--input', { hint });
  const file = arg.slice(1);
  if (!file) throw new UsageError('--input @ names no file: pass @path/to/input.json');
  let bytes: Buffer;
  try {
    bytes = readBounded(file, LIMITS.inputBytes);
  } catch (err) {
    throw new UsageError(
      `cannot read input file ${escapeLine(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const where = `the file ${escapeLine(file)}`;
  if (bytes.length > LIMITS.inputBytes)
    throw new UsageError(
      `--input (${where}) is larger than ${LIMITS.inputBytes} bytes (${LIMITS.inputBytes / 1024} KiB), the most accepted`,
    );
  return parseJsonText(decodeUtf8(bytes, `--input (${where})`), '--input', { where, hint });
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
  const record = await client.wait(workflowId, opts.json ? undefined : (r) => io.err(progressLine(r)), (e) =>
    io.err(`  waiting: ${e.message}`),
  );
  if (opts.json) io.out(terminalJson(redactDeep(record, client.redaction), 2));
  else
    summarize(record, client.redaction)
      .slice(1)
      .forEach((l) => io.out(l));
  return record.state === 'completed' ? 0 : 3;
}

/** `run <loop> --input JSON|@file [--id ID] [--wait] [--json]`. */
export const runDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('run <loop>')
    .description('start a run of a loop')
    .option('--input <json>', 'the loop input: JSON, or @file')
    .option('--id <id>', 'workflow id (default <loop>/<time>-<hex>)')
    .option('--wait', 'follow the run; exit 0 when it completes, 3 otherwise')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, loop: string, opts) => runCommand(client, loop, opts, io))));
};
