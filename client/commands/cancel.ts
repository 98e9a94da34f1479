import type { LoopwrightClient } from '../loopwright-client';
import { terminalJson } from '../../common/terminal';
import type { CommandDefinition } from '../cli-command';
import { summarize, type Output } from '../output';

/** `cancel <id> [--json]`: the run ends `canceled` with its record. */
export async function cancelCommand(
  client: LoopwrightClient,
  id: string,
  opts: { json?: boolean },
  io: Output,
): Promise<number> {
  const record = await client.cancel(id);
  if (opts.json) io.out(terminalJson(record, 2));
  else summarize(record).forEach((l) => io.out(l));
  return 0;
}

/** `cancel <id> [--json]`. */
export const cancelDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('cancel <id>')
    .description('cancel a run; it ends canceled with its record')
    .option('--json', 'the record as JSON')
    .action(action(withClient((client, id: string, opts) => cancelCommand(client, id, opts, io))));
};
