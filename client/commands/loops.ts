import { BUILT_IN_LOOPS } from '../../loops';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';

/** `loops`: the built-in loops, each with an example input. */
export async function loopsCommand(io: Output): Promise<number> {
  for (const loop of BUILT_IN_LOOPS.values())
    io.out(`${loop.name}  ${loop.description}\n  example: --input '${JSON.stringify(loop.example)}'`);
  return 0;
}

/** `loops`. */
export const loopsDefinition: CommandDefinition = (program, { action, io }) => {
  program
    .command('loops')
    .description('list the built-in loops with an example input')
    .action(action(() => loopsCommand(io)));
};
