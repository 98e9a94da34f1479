import { realpathSync } from 'node:fs';
import { z } from 'zod';
import { defaultSandbox, SandboxUnavailableError } from '../sandbox/sandbox';
import { matchAllowed, splitCommand } from './shell-words';
import { ToolError, type Tool } from './types';

const RunCommandInputSchema = z.object({
  command: z.string().min(1).describe('One command line, e.g. npm test -- --runInBand; no pipes, redirections or ;'),
});
/** Input of `run_command`. */
export type RunCommandInput = z.infer<typeof RunCommandInputSchema>;

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

function withTrailer(output: string, trailer: string): string {
  return output === '' || output.endsWith('\n') ? `${output}${trailer}` : `${output}\n${trailer}`;
}

/**
 * `run_command { command }`: runs one allowed command in the workspace root, without a
 * shell, and returns its interleaved stdout and stderr (head and tail kept within
 * `ctx.outputCapChars`) followed by `[exit code N]`. A non-zero exit is a normal result (the
 * model must see failing tests). Refused with a ToolError: shell metacharacters outside
 * quotes, and commands whose argv does not start with an entry of `ctx.allowedCommands`.
 * The command runs in the worker's sandbox (activities/sandbox): no network, no secrets in its
 * environment (an allow-list plus what the loop declares), the workspace the only writable
 * place, `.git` read-only, and nothing it starts outlives it. On timeout the sandbox is killed
 * and the output comes back as a ToolError ending in `[timed out after Ns]`; on cancellation
 * it is killed and the abort is rethrown. A worker without a working sandbox (and no opt-out)
 * refuses with the one-line reason.
 */
export const runCommandTool: Tool<RunCommandInput> = {
  name: 'run_command',
  description:
    'Run one command in the workspace root and return its combined stdout/stderr and exit code. ' +
    'Runs WITHOUT a shell: no pipes, redirections, ;, &&, $( ), variables or globs. Quotes and ' +
    'backslash escapes work as in a shell. Only allow-listed commands (by their first words) may run. ' +
    'A non-zero exit code is reported, not treated as a tool failure.',
  class: 'write',
  input: RunCommandInputSchema,
  async run(input, ctx) {
    const argv = splitCommand(input.command);
    if (argv.length === 0) throw new ToolError('empty command: say what to run');
    if (!matchAllowed(argv, ctx.allowedCommands)) {
      const shown = argv.join(' ');
      const allowed = ctx.allowedCommands.filter((c) => c.trim() !== '');
      throw new ToolError(
        `command not allowed: ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown} ` +
          `(${allowed.length > 0 ? `allowed: ${allowed.join(', ')}` : 'no commands are allowed in this loop'})`,
      );
    }
    const sandbox = ctx.sandbox ?? defaultSandbox();
    const result = await sandbox
      .run(argv, {
        workspace: realpathSync(ctx.root),
        env: ctx.commandEnv,
        timeoutMs: ctx.commandTimeoutMs,
        capChars: ctx.outputCapChars,
        signal: ctx.signal,
        heartbeat: ctx.heartbeat,
      })
      .catch((err: unknown) => {
        throw err instanceof SandboxUnavailableError ? new ToolError(err.message) : err;
      });
    ctx.onCommand?.({ sandbox: result.sandbox });
    if (result.code === 1 && result.output.startsWith(`bwrap: execvp ${argv[0]}: No such file or directory`)) {
      throw new ToolError(`cannot run ${argv[0]}: ${argv[0]} was not found on the PATH inside the sandbox`);
    }
    if (result.timedOut) {
      throw new ToolError(withTrailer(result.output, `[timed out after ${seconds(ctx.commandTimeoutMs)}]`));
    }
    const trailer = result.code !== null ? `[exit code ${result.code}]` : `[killed by ${result.signal ?? 'a signal'}]`;
    return withTrailer(result.output, trailer);
  },
};
