import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { HeadTailBuffer } from './output';
import { ToolError } from './types';

/** How a process run by {@link spawnCapture} ended. */
export interface Captured {
  /** stdout and stderr interleaved as they arrived, capped (head and tail kept). */
  output: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Why the command was stopped by the caller's `stop` signal, if it was. */
  stopped?: string;
}

/** Options of {@link spawnCapture}. */
export interface SpawnOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  capChars: number;
  signal?: AbortSignal;
  heartbeat?: () => void;
  /**
   * Stops the command (its whole group killed, as on timeout) when it fires; the promise resolves
   * with `stopped` set to its reason. Unlike `signal`, this is not a cancellation of the caller.
   */
  stop?: AbortSignal;
  /** Open descriptors the child gets as fd 3, 4, ... (a seccomp filter for bubblewrap); the caller closes them after the call. */
  extraFds?: number[];
}

// After the group is killed, how long to wait for the pipes to close (a process that left
// the group may still hold them).
const CLOSE_GRACE_MS = 1000;

/**
 * Runs `argv` without a shell in its own process group, stdin closed. The whole group is
 * killed when the command times out, when `signal` aborts (the promise then rejects with the
 * abort reason) and when the command itself exits (no background process outlives it).
 */
export function spawnCapture(argv: string[], opts: SpawnOptions): Promise<Captured> {
  opts.signal?.throwIfAborted();
  return new Promise<Captured>((resolve, reject) => {
    const [command, ...args] = argv;
    if (command === undefined) return reject(new Error('spawnCapture: argv is empty, so there is no command to run'));
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      shell: false,
      stdio: ['ignore', 'pipe', 'pipe', ...(opts.extraFds ?? [])],
    });
    const buffer = new HeadTailBuffer(opts.capChars);
    for (const stream of [child.stdout!, child.stderr!]) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => buffer.push(decoder.write(chunk)));
      stream.on('end', () => buffer.push(decoder.end()));
    }
    let timedOut = false;
    let stopped: string | undefined;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    let grace: NodeJS.Timeout | undefined;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* the group is already gone */
      }
    };
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      if (beat) clearInterval(beat);
      opts.signal?.removeEventListener('abort', onAbort);
      opts.stop?.removeEventListener('abort', onStop);
      if (err !== undefined) reject(err);
      else resolve({ output: buffer.toString(), ...exit, timedOut, ...(stopped !== undefined ? { stopped } : {}) });
    };
    const killAndFinish = () => {
      killGroup();
      grace ??= setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(opts.signal?.aborted ? opts.signal.reason : undefined);
      }, CLOSE_GRACE_MS);
    };
    const onAbort = () => {
      killAndFinish();
      finish(opts.signal?.reason);
    };
    const onStop = () => {
      stopped ??= String(opts.stop?.reason ?? 'stopped');
      killAndFinish();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killAndFinish();
    }, opts.timeoutMs);
    const beat = opts.heartbeat ? setInterval(opts.heartbeat, 1000) : undefined;
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.stop?.aborted) onStop();
    else opts.stop?.addEventListener('abort', onStop, { once: true });
    child.on('error', (err: NodeJS.ErrnoException) => {
      const reason = err.code === 'ENOENT' ? `${argv[0]} was not found on the worker's PATH` : err.message;
      finish(new ToolError(`cannot run ${argv[0]}: ${reason}`));
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      killAndFinish();
    });
    child.on('close', () => finish());
  });
}
