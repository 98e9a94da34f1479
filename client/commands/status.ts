import { improvementStatus, isImprovement } from '../improve';
import { redactDeep } from '../../common/redact';
import { terminalJson } from '../../common/terminal';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import { summarize, type Output } from '../output';
import { runRedaction } from '../run-redaction';
import { improvementLines } from './improve';

/**
 * `status <id> [--json]`: the run record (or an improvement run's record), as a summary or as
 * JSON. Both are inert on a terminal: the summary is escaped (common/terminal.ts), the JSON is
 * exact JSON with C1 and bidi characters written as `\uXXXX`. Both are redacted with the client's
 * redaction and the run's pinned names (client/run-redaction.ts), as `trace` is.
 */
export async function statusCommand(
  client: LoopwrightClient,
  id: string,
  opts: { json?: boolean },
  io: Output,
): Promise<number> {
  if (await isImprovement(client, id)) {
    const record = redactDeep(await improvementStatus(client, id), client.redaction);
    if (opts.json) io.out(terminalJson(record, 2));
    else improvementLines(record).forEach((l) => io.out(l));
    return 0;
  }
  const [record, redaction] = await Promise.all([client.status(id), runRedaction(client, id)]);
  if (opts.json) io.out(terminalJson(redactDeep(record, redaction), 2));
  else summarize(record, redaction).forEach((l) => io.out(l));
  return 0;
}

/** `status <id> [--json]`. */
export const statusDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('status <id>')
    .description("a run's record")
    .option('--json', 'the run record as JSON')
    .action(action(withClient((client, id: string, opts) => statusCommand(client, id, opts, io))));
};
