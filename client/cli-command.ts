import type { Command } from 'commander';
import { LoopwrightClient } from './loopwright-client';
import type { Output } from './output';

/** A command's handler: its arguments and options in, the CLI's exit code out. */
export type Handler = (...args: any[]) => Promise<number>;

/** A handler that talks to Temporal: a connected client first, then the command's arguments and options. */
export type ClientHandler = (client: LoopwrightClient, ...args: any[]) => Promise<number>;

/** commander's action for a handler: what `.action()` takes. */
export type Action = (...args: unknown[]) => Promise<void>;

/** What every command's definition is given (see buildProgram in cli.ts). */
export interface CliContext {
  io: Output;
  env: Record<string, string | undefined>;
  /** The action that runs `fn` and makes its result the CLI's exit code. */
  action(fn: Handler): Action;
  /**
   * `fn` with a connected client (closed after it); `before` (the command's own checks of its
   * arguments) runs first, so bad input never connects.
   */
  withClient(fn: ClientHandler, before?: (...args: any[]) => unknown): Handler;
}

/**
 * One command (or a group of them): declares on `program` its name, arguments, options and help
 * text beside its handler, and wires the handler as its action. Every file in client/commands/
 * exports one; client/cli.ts is the list of them, in the order `--help` shows them.
 */
export type CommandDefinition = (program: Command, cli: CliContext) => void;

/** The context of one CLI invocation: `setExit` receives each handler's exit code. */
export function cliContext(
  io: Output,
  env: Record<string, string | undefined>,
  setExit: (code: number) => void,
): CliContext {
  return {
    io,
    env,
    action:
      (fn) =>
      async (...args) =>
        setExit(await fn(...args)),
    withClient:
      (fn, before) =>
      async (...args) => {
        before?.(...args);
        const client = await LoopwrightClient.connect({ env });
        try {
          return await fn(client, ...args);
        } finally {
          await client.close();
        }
      },
  };
}
