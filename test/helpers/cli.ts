import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const CLI = path.join(__dirname, '..', '..', 'dist', 'client', 'cli.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment a CLI process of the suite gets: `env`, plus the suite's key ring unless `env`
 * says otherwise (a person's CLI reads the ring their runs were encrypted with).
 */
function cliEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return (
    'LOOPWRIGHT_KEYS' in env ? env : { ...env, LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS }
  ) as NodeJS.ProcessEnv;
}

/** Runs the built `loopwright` CLI to completion (no stdin, like CI). */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 60_000,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `loopwright ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running CLI process (dev, model-server) with its output so far. */
export interface Background {
  child: ChildProcess;
  output(): string;
  /** Resolves when the output matches, rejects when the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export function startCli(args: string[], env: Record<string, string | undefined>): Background {
  const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    waitFor: (pattern, timeoutMs = 90_000) =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const poll = setInterval(() => {
          const match = pattern.exec(text);
          if (match) {
            clearInterval(poll);
            resolve(match[0]);
          } else if (child.exitCode !== null || Date.now() - started > timeoutMs) {
            clearInterval(poll);
            reject(
              new Error(
                `loopwright ${args.join(' ')} ${child.exitCode !== null ? `exited with ${child.exitCode}` : 'timed out'} before printing ${pattern}:\n${text}`,
              ),
            );
          }
        }, 100);
      }),
    stop: async (signal = 'SIGINT', timeoutMs = 30_000) => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** `loopwright worker` processes started by {@link startWorkerProcess}, for {@link stopWorkerProcesses}. */
const workerProcesses: Background[] = [];

/** Starts a `loopwright worker` process and resolves once it polls its task queue. */
export async function startWorkerProcess(
  env: Record<string, string | undefined>,
  args: string[] = [],
): Promise<Background> {
  const worker = startCli(['worker', ...args], env);
  workerProcesses.push(worker);
  await worker.waitFor(/worker polling task queue/);
  return worker;
}

/** Kills every worker process this test file started (by its pid). */
export async function stopWorkerProcesses(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  for (const w of workerProcesses.splice(0)) await w.stop(signal);
}
