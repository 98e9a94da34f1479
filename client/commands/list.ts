import { UsageError } from '../../common/errors';
import { redactDeep } from '../../common/redact';
import { terminalJson } from '../../common/terminal';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import { runTable, type Output } from '../output';

/** `list [--state S] [--loop L] [--limit N] [--json]`, through the search attributes; redacted with the client's redaction. */
export async function listCommand(
  client: LoopwrightClient,
  opts: { state?: string; loop?: string; limit?: string; json?: boolean; needsAudit?: boolean },
  io: Output,
): Promise<number> {
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`--limit must be a whole number from 1, not "${opts.limit}"`);
  const rows = await client.list({ state: opts.state, loop: opts.loop, limit, needsAudit: opts.needsAudit });
  if (opts.json) io.out(terminalJson(redactDeep(rows, client.redaction), 2));
  else runTable(rows, client.redaction).forEach((l) => io.out(l));
  return 0;
}

/** `list [--state S] [--loop L] [--limit N] [--needs-audit] [--json]`. */
export const listDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('list')
    .description('runs, newest first')
    .option('--state <state>', 'filter by state')
    .option('--loop <loop>', 'filter by loop')
    .option('--limit <n>', 'at most this many', '50')
    .option('--needs-audit', 'only completed runs that wait for a person to audit them')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, opts) => listCommand(client, opts, io))));
};
