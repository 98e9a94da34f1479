import { keyRingFromEnv } from '../../crypto/keyring';
import { readReportFile } from '../../activities/report-file';
import { UsageError } from '../../common/errors';
import { escapeBlock } from '../../common/terminal';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';

/**
 * `report <file>`: prints a report or trace report the worker wrote, plaintext or sealed
 * (`<name>.md.enc`, written outside the workspace when the worker has a key ring; see
 * activities/report-file.ts), opened with this process's ring (LOOPWRIGHT_KEYS). Printed inert
 * (common/terminal.ts). A sealed report whose key the ring lacks is a KeyMissingError naming it.
 */
export async function reportCommand(
  file: string,
  env: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  const text = readReportFile(file, keyRingFromEnv(env));
  if (text === undefined) throw new UsageError(`${file} is not a report file: no regular file there`);
  io.out(escapeBlock(text).trimEnd());
  return 0;
}

/** `report <file>`. */
export const reportDefinition: CommandDefinition = (program, { action, env, io }) => {
  program
    .command('report <file>')
    .description(
      'print a report or trace report the worker wrote; a sealed one (.md.enc) is opened with LOOPWRIGHT_KEYS',
    )
    .action(action((file: string) => reportCommand(file, env, io)));
};
