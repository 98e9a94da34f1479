/**
 * Worker memory over many runs: a `loopwright worker` process (as deployed: its own process,
 * the prebuilt bundle) on a dev server this script starts, N runs of an `evaluate-optimize` agent
 * session (2 model turns, one `read_file`, a judge), C at a time, against the scripted model.
 * Prints the worker's RSS (from /proc) after every block of runs, so growth shows as a trend,
 * with the V8 heaps of its main thread (activities) and of its workflow thread (the sticky cache):
 *   npm run bench:soak -- [runs=2000] [concurrency=50] [block=200]
 */
import { rmSync } from 'node:fs';
import { type LoopwrightClient } from '../../client/loopwright-client';
import type { loopWorkflow } from '../../workflows/loop/loop-workflow';
import { benchScript, makeBenchWorkspace } from './bench-model';
import { benchInput, uniqueName } from './session';
import { load1, startBenchStack } from './worker-stack';
import { runScript, wholeArgs } from './run-script';

/** Runs `count` runs, `concurrency` at a time, each waited for through its result (a long poll). */
async function runMany(client: LoopwrightClient, count: number, concurrency: number, input: unknown): Promise<number> {
  let next = 0;
  let failed = 0;
  const lane = async () => {
    while (next < count) {
      next++;
      const { workflowId } = await client.run('evaluate-optimize', input, { id: uniqueName('soak') });
      const record = await client.temporal.workflow.getHandle<typeof loopWorkflow>(workflowId).result();
      if (record.state !== 'completed') failed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return failed;
}

async function main(runs: number, concurrency: number, block: number): Promise<void> {
  const workspace = makeBenchWorkspace();
  const stack = await startBenchStack(benchScript(2), { heapProbe: true });
  try {
    const input = benchInput(2, workspace);
    console.log(
      `worker pid ${stack.worker.pid} on ${stack.server.address}; ${runs} runs, ${concurrency} at a time; RSS after each block of ${block}`,
    );
    console.log(
      `${'runs'.padStart(6)} ${'RSS MiB'.padStart(8)} ${'main heap'.padStart(10)} ${'wf heap'.padStart(8)} ${'runs/s'.padStart(7)} ${'failed'.padStart(7)} ${'load'.padStart(6)}`,
    );
    const memory = () => {
      const heaps = stack.heaps();
      return `${stack.rss().toFixed(0).padStart(8)} ${heaps.main.toFixed(0).padStart(10)} ${heaps.threads.toFixed(0).padStart(8)}`;
    };
    await new Promise((r) => setTimeout(r, 1500));
    console.log(`${'0'.padStart(6)} ${memory()}`);
    let done = 0;
    while (done < runs) {
      const n = Math.min(block, runs - done);
      const started = Date.now();
      const failed = await runMany(stack.client, n, concurrency, input);
      done += n;
      const rate = n / ((Date.now() - started) / 1000);
      console.log(
        `${String(done).padStart(6)} ${memory()} ${rate.toFixed(1).padStart(7)} ${String(failed).padStart(7)} ${load1().padStart(6)}`,
      );
    }
  } finally {
    await stack.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [runs, concurrency, block] = wholeArgs(
    [2000, 50, 200],
    'runs, concurrency and block size as whole numbers above 0',
  );
  runScript(() => main(runs, concurrency, block));
}
