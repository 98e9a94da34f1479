import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { createToolRegistry, executeTool } from '../../activities/tools/registry';
import type { ToolContext } from '../../activities/tools/types';

// The hostile sandbox tests' way in: the real tools, as the model asks for them, in the real sandbox.

const registry = createToolRegistry();

/** The sandbox of a worker with this process's PATH and LOOPWRIGHT_HOME at `<dir>/home`, plus `env`. */
export function sandboxIn(dir: string, env: Record<string, string> = {}): Sandbox {
  return createSandbox(
    sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_HOME: path.join(dir, 'home'), ...env }),
  );
}

/** The tool context of a loop working in `root` that allows `allowedCommands`. */
export function toolContext(
  sandbox: Sandbox,
  root: string,
  allowedCommands: string[] = ['sh'],
  commandTimeoutMs = 30_000,
): ToolContext {
  return { root, allowedCommands, commandTimeoutMs, outputCapChars: 100_000, sandbox };
}

/** Runs one tool call as the model would ask for it. */
export function callTool(c: ToolContext, name: string, input: Record<string, unknown> = {}) {
  return executeTool(registry, name, input, c);
}

/** run_command of a shell script (the loop allows `sh`); its output with `[exit code N]`. */
export async function runShell(c: ToolContext, script: string): Promise<string> {
  return (await callTool(c, 'run_command', { command: `sh -c '${script.replace(/'/g, `'\\''`)}'` })).content;
}

/** Runs `fn` with these variables in this process's environment too (the file tools read the worker's own). */
export async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
