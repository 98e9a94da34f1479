import { runModelServerCommand } from '../../model-server/main';
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
