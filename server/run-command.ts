import { spawn } from 'child_process';

/** What a finished command left behind. `error` is set when it could not start or timed out. */
export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: string;
}

/** Options for {@link runCommand}. */
export interface RunCommandOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Kill the command after this many milliseconds (default 60 s). */
  timeoutMs?: number;
  /** Run as this user and group (only a root process can). */
  uid?: number;
  gid?: number;
}

const MAX_OUTPUT = 64 * 1024;

/**
 * Runs `file args` without a shell and resolves with its exit code and (the last 64 KB of) its
 * output. Never rejects: a missing executable or a timeout comes back in `error`.
 */
export function runCommand(
  file: string,
  args: readonly string[],
  opts: RunCommandOptions = {},
): Promise<CommandResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let error: string | undefined;
    const child = spawn(file, args, {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      uid: opts.uid,
      gid: opts.gid,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const timer = setTimeout(() => {
      error = `timed out after ${Math.round((opts.timeoutMs ?? 60_000) / 1000)} s`;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 60_000);
    child.stdout.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(-MAX_OUTPUT)));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-MAX_OUTPUT)));
    child.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code === 'ENOENT' ? `${file} not found` : err.message;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, error });
    });
  });
}

/** One line saying why a command failed: its error, else the last line it printed, else its exit code. */
export function failureReason(result: CommandResult): string {
  if (result.error) return result.error;
  const lines = `${result.stdout}\n${result.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const last = lines[lines.length - 1];
  const tail = last ? `: ${last.length > 200 ? `${last.slice(0, 200)}...` : last}` : '';
  return `exited with code ${String(result.code)}${tail}`;
}
