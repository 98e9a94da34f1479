import { deliverEvent } from '../events';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { parseInputArg } from './run';

/**
 * `event <loop> --key KEY --input JSON|@file [--force] [--json]`: starts the run for an event
 * once per key (workflow id `<loop>/<key>`). A duplicate delivery reports the existing run and
 * exits 0; --force runs a closed key again and refuses (exit 2) while its run is still going.
 */
export async function eventCommand(
  client: LoopwrightClient,
  loop: string,
  opts: { key?: string; input?: string; force?: boolean; json?: boolean },
  io: Output,
): Promise<number> {
  const input = parseInputArg(opts.input);
  const delivery = await deliverEvent(client, { loop, key: opts.key ?? '', input, force: opts.force, by: 'cli' });
  if (opts.json) {
    io.out(JSON.stringify(delivery.duplicate ? delivery : { workflowId: delivery.workflowId, duplicate: false }));
    return 0;
  }
  io.out(delivery.workflowId);
  io.out(
    delivery.duplicate
      ? `already started: ${delivery.workflowId} (state ${delivery.state}); pass --force to run a closed key again`
      : `started (event key ${opts.key}${opts.force ? ', forced' : ''})`,
  );
  return 0;
}

/** `event <loop> --key KEY --input JSON|@file [--force] [--json]`. */
export const eventDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('event <loop>')
    .description(
      'start the run for an event once per key (workflow id <loop>/<key>); a duplicate reports the existing run',
    )
    .requiredOption('--key <key>', 'the event key: letters, digits and ._:-/ (at most 200)')
    .option('--input <json>', 'the loop input: JSON, or @file')
    .option('--force', 'run a key whose run has closed again (same id)')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, loop: string, opts) => eventCommand(client, loop, opts, io))));
};
