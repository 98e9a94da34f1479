/**
 * What SQLite's `synchronous` setting costs the dev server: the same runs against a dev server
 * with OFF (the Temporal CLI's default), NORMAL (Loopwright's default) and FULL, each on its own
 * fresh file and worker process, one after the other. Prints runs/s and the server's CPU per run,
 * and the machine's load during each, so a noisy figure shows:
 *   npm run bench:sqlite -- [runs=300] [concurrency=30]
 * The settings' durability (README "Durability of the dev server's file"): OFF survives a killed
 * process but a power loss or OS crash can corrupt the file; NORMAL (with WAL) can lose the last
 * commits since the WAL was synced, never corrupt; FULL loses nothing that was acknowledged.
 */
import type { SqliteSync } from '../../server/dev-server';
import type { loopWorkflow } from '../../workflows/loop/loop-workflow';
import { benchScript, makeBenchWorkspace } from './bench-model';
import { procCpuSeconds as cpuSeconds } from './proc-cpu';
import { benchInput, uniqueName } from './session';
import { load1, startBenchStack } from './worker-stack';
import { runScript, wholeArgs } from './run-script';

async function measure(sync: SqliteSync, runs: number, concurrency: number, workspace: string): Promise<string> {
  const stack = await startBenchStack(benchScript(2), { sqliteSync: sync });
  try {
    const input = benchInput(2, workspace);
    const cpu0 = cpuSeconds(stack.server.pid);
    const started = Date.now();
    let next = 0;
    let failed = 0;
    const lane = async () => {
      while (next < runs) {
        next++;
        const { workflowId } = await stack.client.run('evaluate-optimize', input, { id: uniqueName('sync') });
        const record = await stack.client.temporal.workflow.getHandle<typeof loopWorkflow>(workflowId).result();
        if (record.state !== 'completed') failed++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    const seconds = (Date.now() - started) / 1000;
    const serverMs = ((cpuSeconds(stack.server.pid) - cpu0) * 1000) / runs;
    return `${sync.padEnd(7)} ${(runs / seconds).toFixed(1).padStart(7)} ${serverMs.toFixed(1).padStart(14)} ${String(failed).padStart(7)} ${load1().padStart(6)}`;
  } finally {
    await stack.close();
  }
}

async function main(runs: number, concurrency: number): Promise<void> {
  const workspace = makeBenchWorkspace();
  console.log(
    `${runs} evaluate-optimize runs (2 model turns, a read_file, a judge), ${concurrency} at a time, per setting`,
  );
  console.log(
    `${'setting'.padEnd(7)} ${'runs/s'.padStart(7)} ${'server CPU/run'.padStart(14)} ${'failed'.padStart(7)} ${'load'.padStart(6)}`,
  );
  for (const sync of ['OFF', 'NORMAL', 'FULL'] as const) console.log(await measure(sync, runs, concurrency, workspace));
}

if (require.main === module) {
  const [runs, concurrency] = wholeArgs([300, 30], 'runs and concurrency as whole numbers above 0');
  runScript(() => main(runs, concurrency));
}
