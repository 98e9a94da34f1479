/**
 * `npm run bench:cluster -- [N=100]`: throughput and CPU per run of `npm run cluster`'s topology,
 * with 1 and then 2 Loopwright workers (a fresh cluster for each). N evaluate-optimize runs at once
 * (4 model calls each, 0 ms model latency, no key ring); prints runs/s and the CPU milliseconds per
 * run of every process: PostgreSQL (the server and all its backends), each Temporal service, each
 * worker, and this process (the client and the scripted model).
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import type { RunRecord } from '../../common/run-record';
import { startModelServer } from '../../model-server/server';
import { startCluster } from '../../server/cluster/cluster';
import { stopCluster } from '../../server/cluster/control';
import { freePort } from '../../server/free-port';
import { procCpuSeconds, selfCpuSeconds } from './proc-cpu';
import { runScript, wholeArgs } from './run-script';
import { uniqueName } from './session';
import { latencyTag, THROUGHPUT_INPUT, throughputScript } from './throughput-measure';

/** CPU seconds of `pid` and its direct children (PostgreSQL's backends are children of the postmaster). */
function treeCpuSeconds(pid: number): number {
  let total = procCpuSeconds(pid);
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) total += procCpuSeconds(Number(name));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

async function measure(runs: number, workers: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bench-cluster-'));
  chmodSync(dir, 0o711); // PostgreSQL may run as another user (see server/cluster/postgres.ts).
  const model = await startModelServer({ script: throughputScript([0]), port: 0 });
  const env = {
    ...process.env,
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'bench',
    LOOPWRIGHT_KEYS: '',
    LOOPWRIGHT_ALLOWED_SIGNERS: '',
    LOOPWRIGHT_TASK_QUEUE: uniqueName('bench'),
  };
  try {
    const state = await startCluster({
      dir: path.join(dir, 'cluster'),
      port: await freePort(),
      workers,
      env,
      log: (line) => console.error(line),
    });
    const client = await LoopwrightClient.connect({ env: { ...env, TEMPORAL_ADDRESS: state.addresses[0] } });
    const cpu = () =>
      Object.fromEntries([
        ...state.processes.map((p) => [p.name, treeCpuSeconds(p.pid!)]),
        ['client+model', selfCpuSeconds()],
      ]) as Record<string, number>;
    // One run first, so every process has loaded what it needs before the clock starts.
    await client.temporal.workflow
      .getHandle(
        (await client.run('evaluate-optimize', THROUGHPUT_INPUT, { id: uniqueName(`${latencyTag(0)}-warm`) }))
          .workflowId,
      )
      .result();
    const prefix = uniqueName(latencyTag(0));
    const [load0, cpu0, t0] = [loadavg()[0] ?? NaN, cpu(), performance.now()];
    const records = await Promise.all(
      Array.from({ length: runs }, async (_, i) => {
        const { workflowId } = await client.run('evaluate-optimize', THROUGHPUT_INPUT, { id: `${prefix}-${i}` });
        return (await client.temporal.workflow.getHandle(workflowId).result()) as RunRecord;
      }),
    );
    const [wall, cpu1, load1] = [(performance.now() - t0) / 1000, cpu(), loadavg()[0] ?? NaN];
    await client.close();
    const failed = records.filter((r) => r.state !== 'completed' || r.attempts.length !== 2).length;
    console.log(
      `\n${workers} worker${workers > 1 ? 's' : ''}: ${runs} runs in ${wall.toFixed(1)} s = ${(runs / wall).toFixed(2)} runs/s, ${failed} not as expected, load ${load0.toFixed(1)} -> ${load1.toFixed(1)}`,
    );
    console.log('| process | CPU s | CPU ms/run |\n| --- | --- | --- |');
    let total = 0;
    for (const [name, before] of Object.entries(cpu0)) {
      const used = (cpu1[name] ?? NaN) - before;
      total += used;
      console.log(`| ${name} | ${used.toFixed(2)} | ${((used * 1000) / runs).toFixed(1)} |`);
    }
    console.log(`| total | ${total.toFixed(2)} | ${((total * 1000) / runs).toFixed(1)} |`);
  } finally {
    await stopCluster(path.join(dir, 'cluster'));
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [runs] = wholeArgs([100], 'N (runs at once, a whole number above 0)');
  runScript(async () => {
    await measure(runs, 1);
    await measure(runs, 2);
  });
}
