import { runModelServerCommand } from '../../model-server/main';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { portOpt as numberOpt } from '../prechecks';
import { untilSignal } from './process';

/** `model-server --script FILE [--port N] [--log FILE]`: serves until Ctrl-C. */
export async function modelServerCommand(
  opts: { script: string; port?: string; log?: string },
  io: Output,
): Promise<number> {
  const server = await runModelServerCommand({
    scriptPath: opts.script,
    port: numberOpt(opts.port),
    logFile: opts.log,
    out: io.out,
  });
  await untilSignal();
  await server.close();
  return 0;
}

/** `model-server --script FILE [--port 8765] [--log FILE]`. */
export const modelServerDefinition: CommandDefinition = (program, { action, io }) => {
  program
    .command('model-server')
    .description('serve the Anthropic Messages API from a JSON script (tests, demos)')
    .requiredOption('--script <file>', 'the JSON script')
    .option('--port <n>', 'port', '8765')
    .option('--log <file>', 'append each request as a JSON line')
    .action(action((opts) => modelServerCommand(opts, io)));
};
