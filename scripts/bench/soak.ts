/**
 * Worker memory over many runs: a `loopwright worker` process (as deployed: its own process,
 * the prebuilt bundle) on a dev server this script starts, N runs of an `evaluate-optimize` agent
 * session (2 model turns, one `read_file`, a judge), C at a time, against the scripted model.
 * Prints the worker's RSS (from /proc) after every block of runs, so growth shows as a trend:
 *   npm run bench:soak -- [runs=2000] [concurrency=50] [block=200]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import { startModelServer } from '../../model-server/server';
import { freePort, startDevServer } from '../../server/dev-server';
import { findTemporalCli } from '../../server/temporal-binary';
import { benchScript, makeBenchWorkspace } from './bench-model';
import { benchInput, uniqueName } from './session';

/** Resident memory of `pid` in MiB (VmRSS), or NaN when it cannot be read. */
export function rssMiB(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Runs `count` runs, `concurrency` at a time, each waited for through its result (a long poll). */
async function runMany(client: LoopwrightClient, count: number, concurrency: number, input: unknown): Promise<number> {
  let next = 0;
  let failed = 0;
  const lane = async () => {
    while (next < count) {
      next++;
      const { workflowId } = await client.run('evaluate-optimize', input, { id: uniqueName('soak') });
      const record = (await client.temporal.workflow.getHandle(workflowId).result()) as { state: string };
      if (record.state !== 'completed') failed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return failed;
}

async function main(runs: number, concurrency: number, block: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-soak-'));
  const workspace = makeBenchWorkspace();
  const cli = await findTemporalCli({ log: (line) => console.error(line) });
  const server = await startDevServer({ cli, dbFile: path.join(dir, 'temporal.db'), port: await freePort(), headless: true });
  const model = await startModelServer({ script: benchScript(2), port: 0 });
  const env = {
    PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: server.address, LOOPWRIGHT_TASK_QUEUE: uniqueName('soak'), ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'soak',
    LOOPWRIGHT_HOME: dir, LOOPWRIGHT_KEYS: '', LOOPWRIGHT_ALLOWED_SIGNERS: '', ...(process.env.LOOPWRIGHT_SANDBOX ? { LOOPWRIGHT_SANDBOX: process.env.LOOPWRIGHT_SANDBOX } : {}),
  };
  const worker = spawn(process.execPath, [path.join(__dirname, '..', '..', 'client', 'cli.js'), 'worker'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  worker.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const client = await LoopwrightClient.connect({ env });
  try {
    while (!/worker polling task queue/.test(log)) {
      if (worker.exitCode !== null) throw new Error(`the worker exited: ${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const input = benchInput(2, workspace);
    console.log(`worker pid ${worker.pid} on ${server.address}; ${runs} runs, ${concurrency} at a time; RSS after each block of ${block}`);
    console.log(`${'runs'.padStart(6)} ${'RSS MiB'.padStart(8)} ${'runs/s'.padStart(7)} ${'failed'.padStart(7)}`);
    console.log(`${'0'.padStart(6)} ${rssMiB(worker.pid!).toFixed(0).padStart(8)}`);
    let done = 0;
    while (done < runs) {
      const n = Math.min(block, runs - done);
      const started = Date.now();
      const failed = await runMany(client, n, concurrency, input);
      done += n;
      const rate = n / ((Date.now() - started) / 1000);
      console.log(`${String(done).padStart(6)} ${rssMiB(worker.pid!).toFixed(0).padStart(8)} ${rate.toFixed(1).padStart(7)} ${String(failed).padStart(7)}`);
    }
  } finally {
    await client.close();
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
    await model.close();
    await server.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [runs, concurrency, block] = [Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 50), Number(process.argv[4] ?? 200)];
  if (![runs, concurrency, block].every((n) => Number.isInteger(n) && n > 0)) {
    console.error(`error: give runs, concurrency and block size as whole numbers above 0, not ${process.argv.slice(2).join(' ')}`);
    process.exit(2);
  }
  main(runs, concurrency, block).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
