#!/usr/bin/env node
import { Command } from 'commander';
import { readConfig } from '../common/config';
import { cliContext, type CommandDefinition } from './cli-command';
import { autonomyDefinition } from './commands/autonomy';
import { cancelDefinition } from './commands/cancel';
import { codecServerDefinition } from './commands/codec-server';
import { decideDefinition } from './commands/decide';
import { demoDefinition } from './commands/demo';
import { devDefinition } from './commands/dev';
import { discoverDefinition } from './commands/discover';
import { eventDefinition } from './commands/event';
import { grantDefinition } from './commands/grant';
import { improveDefinition } from './commands/improve';
import { keysDefinition } from './commands/keys';
import { listDefinition } from './commands/list';
import { loopsDefinition } from './commands/loops';
import { modelServerDefinition } from './commands/model-server';
import { reportDefinition } from './commands/report';
import { reviewDefinition } from './commands/review';
import { runDefinition } from './commands/run';
import { scheduleDefinition } from './commands/schedule';
import { statusDefinition } from './commands/status';
import { traceDefinition } from './commands/trace';
import { webhooksDefinition } from './commands/webhooks';
import { workerDefinition } from './commands/worker';
import { consoleOutput, type Output } from './output';
import { precheckCommand } from './cli-checks';
import { configureCommanderErrors, errorLine } from './cli-errors';
import type { ServiceContext } from './service-errors';

/**
 * Every command, in the order `loopwright --help` lists them. Each file in client/commands/
 * declares its command's arguments, options and help text beside its handler (see
 * client/cli-command.ts); `decide` declares approve, reject, retry, budget and audit, and
 * `schedule`, `improve` (with harness and regression) and `keys` their subcommands.
 */
export const COMMANDS: readonly CommandDefinition[] = [
  devDefinition,
  codecServerDefinition,
  workerDefinition,
  modelServerDefinition,
  demoDefinition,
  loopsDefinition,
  runDefinition,
  statusDefinition,
  traceDefinition,
  reportDefinition,
  reviewDefinition,
  decideDefinition,
  cancelDefinition,
  listDefinition,
  eventDefinition,
  webhooksDefinition,
  discoverDefinition,
  scheduleDefinition,
  improveDefinition,
  keysDefinition,
  autonomyDefinition,
  grantDefinition,
];

/**
 * The `loopwright` command line: a thin layer over LoopwrightClient and the process entry
 * points. Known errors print `error: <message>` (no stack) and exit with their code: 2 for bad
 * usage or input, 1 otherwise; `run --wait` exits 3 when a run ends in any state but completed.
 * Every argument and option is checked before a command connects to Temporal (client/cli-checks.ts,
 * commander's preAction hook), and each command's own checks run before it connects (`before`).
 */
export function buildProgram(
  io: Output,
  env: Record<string, string | undefined>,
  setExit: (code: number) => void,
): Command {
  const program = configureCommanderErrors(new Command('loopwright'), io)
    .description('Run AI agents in verified, budgeted, durable loops on Temporal.')
    .hook('preAction', (_program, command) => precheckCommand(command));
  const cli = cliContext(io, env, setExit);
  for (const define of COMMANDS) define(program, cli);
  return program;
}

/** Where the CLI talks to, for error messages; the defaults when the environment is itself malformed. */
function serviceContext(env: Record<string, string | undefined>): ServiceContext {
  try {
    const config = readConfig(env);
    return { address: config.temporalAddress, namespace: config.namespace };
  } catch {
    return { address: 'TEMPORAL_ADDRESS', namespace: 'TEMPORAL_NAMESPACE' };
  }
}

/**
 * Runs the CLI and returns the exit code. Every error is printed as one line starting `error: `
 * (client/cli-errors.ts): exit 2 for bad usage, input or configuration, 1 for anything else; an
 * unexpected error shows its stack only with LOOPWRIGHT_DEBUG=1.
 */
export async function main(
  argv: string[],
  io: Output = consoleOutput,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  let code = 0;
  const program = buildProgram(io, env, (c) => (code = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    const shown = errorLine(err, serviceContext(env), env);
    if (!shown) return 0;
    shown.lines.forEach((line) => io.err(line));
    return shown.code;
  }
}

/** An error that escaped every command (an unhandled rejection, a throw in a callback): one line, exit 1 unless it is a known one. */
function crash(err: unknown): void {
  const shown = errorLine(err, serviceContext(process.env), process.env) ?? {
    lines: ['error: internal error'],
    code: 1,
  };
  shown.lines.forEach((line) => consoleOutput.err(line));
  process.exit(shown.code);
}

if (require.main === module) {
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  main(process.argv.slice(2)).then((code) => process.exit(code), crash);
}
