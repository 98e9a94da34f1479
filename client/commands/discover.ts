import { escapeLine, terminalJson } from '../../common/terminal';
import { discoveryResult, discoverySchemaOf, startDiscovery } from '../discovery';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { parseInputArg } from './run';

/**
 * `discover <loop> --input JSON|@file [--wait] [--json]`: starts the loop's discovery and prints
 * its id; with --wait, the items it found, the runs it started and the items it skipped.
 */
export async function discoverCommand(
  client: LoopwrightClient,
  loop: string,
  opts: { input?: string; wait?: boolean; json?: boolean },
  io: Output,
): Promise<number> {
  const input = parseInputArg(opts.input);
  const { workflowId } = await startDiscovery(client, loop, input);
  if (!opts.wait) {
    io.out(opts.json ? JSON.stringify({ workflowId }) : workflowId);
    return 0;
  }
  if (!opts.json) io.out(workflowId);
  const result = await discoveryResult(client, workflowId);
  if (opts.json) {
    io.out(terminalJson({ workflowId, ...result }, 2));
    return 0;
  }
  io.out(`  found      ${result.items.length} failing tests`);
  // Item keys and reasons come from the repository's test names and output: printed inert.
  for (const id of result.started) io.out(escapeLine(`  started    ${id}`));
  for (const s of result.skipped) io.out(escapeLine(`  skipped    ${s.workflowId} (${s.reason})`));
  return 0;
}

/** `discover <loop> --input JSON|@file [--wait] [--json]`. */
export const discoverDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('discover <loop>')
    .description(
      "find a loop's work items and start one run per item (ids <loop>/<repo>/<key>; existing ones are skipped)",
    )
    .option('--input <json>', 'the discovery input: JSON, or @file')
    .option('--wait', 'wait and print the runs started and the items skipped')
    .option('--json', 'machine-readable output')
    .action(
      action(async (loop: string, opts) => {
        discoverySchemaOf(loop); // a loop without a discovery source is a usage error, before connecting
        return withClient((client) => discoverCommand(client, loop, opts, io))();
      }),
    );
};
