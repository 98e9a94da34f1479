import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import type { ModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { freePort, startDevServer, type DevServer, type SqliteSync } from '../../server/dev-server';
import { findTemporalCli } from '../../server/temporal-binary';
import type { HeapSample } from './heap-probe';
import { uniqueName } from './session';

/** Resident memory of `pid` in MiB (VmRSS), or NaN when it cannot be read. */
export function rssMiB(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The machine's 1-minute load average, to print beside a figure so a noisy one shows. */
export function load1(): string {
  return (loadavg()[0] ?? NaN).toFixed(2);
}

/** A dev server, the scripted model and a `loopwright worker` process (as deployed), with a client. */
export interface BenchStack {
  server: DevServer;
  model: ModelServer;
  worker: ChildProcess;
  client: LoopwrightClient;
  env: Record<string, string | undefined>;
  /** The worker's RSS in MiB. */
  rss(): number;
  /** The V8 heaps (total, MiB) of the worker's main thread and of its other live threads (the workflow thread). */
  heaps(): { main: number; threads: number };
  close(): Promise<void>;
}

/** Options of {@link startBenchStack}. */
export interface BenchStackOptions {
  /** Passed to `loopwright worker`. */
  workerArgs?: string[];
  /** The dev server's SQLite `synchronous` setting (bench:sqlite). */
  sqliteSync?: SqliteSync;
  /**
   * Load the heap probe (heap-probe.ts) into the worker, for `heaps()`. Off by default: its
   * writes each second are CPU the worker would not spend otherwise, which the throughput bench
   * would count as Loopwright's and not the floor's.
   */
  heapProbe?: boolean;
}

/**
 * Starts a bench stack in a fresh folder: no key ring and no allowed signers (the figures are the
 * loop's, not the codec's: see bench:codec).
 */
export async function startBenchStack(
  script: ModelScript,
  { workerArgs = [], sqliteSync, heapProbe = false }: BenchStackOptions = {},
): Promise<BenchStack> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bench-'));
  const probeDir = path.join(dir, 'heap-probe');
  mkdirSync(probeDir);
  const cli = await findTemporalCli({ log: (line) => console.error(line) });
  const server = await startDevServer({
    cli,
    dbFile: path.join(dir, 'temporal.db'),
    port: await freePort(),
    headless: true,
    sqliteSync,
  });
  const model = await startModelServer({ script, port: 0 });
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: server.address,
    LOOPWRIGHT_TASK_QUEUE: uniqueName('bench'),
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'bench',
    LOOPWRIGHT_HOME: dir,
    LOOPWRIGHT_KEYS: '',
    LOOPWRIGHT_ALLOWED_SIGNERS: '',
    // Passed through: the sandbox mode, the cache size, another workflow bundle to compare, and
    // the claim check's store (to measure Loopwright with it: worker and client both use it).
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) =>
        [
          'LOOPWRIGHT_SANDBOX',
          'LOOPWRIGHT_MAX_CACHED_WORKFLOWS',
          'LOOPWRIGHT_WORKFLOW_BUNDLE',
          'LOOPWRIGHT_PAYLOAD_STORE',
        ].includes(k),
      ),
    ),
    ...(heapProbe
      ? { NODE_OPTIONS: `--require ${path.join(__dirname, 'heap-probe.js')}`, LOOPWRIGHT_BENCH_HEAP_PROBE: probeDir }
      : {}),
  };
  const worker = spawn(
    process.execPath,
    [
      // The worker's own Node flags, to profile it (--cpu-prof --cpu-prof-dir=DIR, --heapsnapshot-signal=SIGUSR2):
      // given on its command line, because Node refuses some of them in NODE_OPTIONS.
      ...nodeFlags('LOOPWRIGHT_BENCH_WORKER_NODE_OPTIONS'),
      path.join(__dirname, '..', '..', 'client', 'cli.js'),
      'worker',
      ...workerArgs,
    ],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  worker.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const client = await LoopwrightClient.connect({ env });
  const close = async () => {
    await client.close();
    if (worker.exitCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
    await model.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    while (!/worker polling task queue/.test(log)) {
      if (worker.exitCode !== null) throw new Error(`the worker exited: ${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await close();
    throw err;
  }
  const tuning = /^tuning: .*$/m.exec(log)?.[0];
  if (tuning) console.log(`worker ${tuning}`);
  return {
    server,
    model,
    worker,
    client,
    env,
    rss: () => rssMiB(worker.pid!),
    heaps: () => {
      if (!heapProbe) throw new Error('this bench stack was started without its heap probe (heapProbe: true)');
      return readHeaps(probeDir);
    },
    close,
  };
}

/** The heap samples the worker's threads wrote in the last 3 s (a thread that ended stops writing). */
function readHeaps(dir: string): { main: number; threads: number } {
  const heaps = { main: NaN, threads: 0 };
  for (const name of readdirSync(dir)) {
    try {
      const sample = JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as HeapSample;
      if (Date.now() - sample.at > 3000) continue;
      if (sample.main) heaps.main = sample.heapTotalMiB;
      else heaps.threads += sample.heapTotalMiB;
    } catch {
      // A file being written: the next block reads it.
    }
  }
  return heaps;
}

/** The floor's worker process (floor-worker.ts) beside a bench stack's, on its own task queue. */
export interface FloorWorker {
  process: ChildProcess;
  taskQueue: string;
  close(): Promise<void>;
}

/** The Node flags an environment variable gives a bench worker's command line (space-separated). */
function nodeFlags(variable: string): string[] {
  return process.env[variable]?.split(/\s+/).filter(Boolean) ?? [];
}

/** Starts the floor's worker against `stack`'s dev server and scripted model; resolves once it polls. */
export async function startFloorWorker(stack: BenchStack): Promise<FloorWorker> {
  const taskQueue = uniqueName('floor');
  // Its own Node flags as the Loopwright worker's (to profile the two side by side).
  const worker = spawn(
    process.execPath,
    [...nodeFlags('LOOPWRIGHT_BENCH_FLOOR_NODE_OPTIONS'), path.join(__dirname, 'floor-worker.js')],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: stack.server.address,
        FLOOR_TASK_QUEUE: taskQueue,
        ANTHROPIC_BASE_URL: stack.model.url,
        ANTHROPIC_API_KEY: 'bench',
        // The same sticky cache as the Loopwright worker's (startBenchStack passes it through too).
        ...(process.env.LOOPWRIGHT_MAX_CACHED_WORKFLOWS
          ? { LOOPWRIGHT_MAX_CACHED_WORKFLOWS: process.env.LOOPWRIGHT_MAX_CACHED_WORKFLOWS }
          : {}),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  worker.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  const close = async () => {
    if (worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
  };
  while (!/floor worker polling task queue/.test(log)) {
    if (worker.exitCode !== null) throw new Error(`the floor worker exited: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { process: worker, taskQueue, close };
}
