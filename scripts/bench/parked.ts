/**
 * Parked runs: M `evaluate-optimize` runs that wait for a human (a `human` check), on a
 * `loopwright worker` process (as deployed) and a dev server this script starts. Prints the
 * worker's RSS before and after parking them, then approves all M at once and prints the time
 * from each decision to its run's close (p50, p95, max) and how many approvals reported an
 * error (each approval's answer is checked against the run's record):
 *   npm run bench:parked -- [runs=1000] [worker flags, e.g. --max-cached-workflows 2000]
 */
import { parseModelScript } from '../../model-server/script';
import type { RunRecord } from '../../common/run-record';
import { uniqueName } from './session';
import { load1, startBenchStack } from './worker-stack';

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

async function main(runs: number, workerArgs: string[]): Promise<void> {
  const script = parseModelScript({ rules: [{ name: 'draft', match: { role: 'worker' }, reply: { content: [{ type: 'text', text: 'a draft' }], usage: { input_tokens: 100, output_tokens: 20 } } }] }, 'parked bench');
  const stack = await startBenchStack(script, workerArgs);
  const { client } = stack;
  try {
    const input = { task: 'Write a draft.', checks: [{ kind: 'human', name: 'editor' }] };
    const before = stack.rss();
    console.log(`worker pid ${stack.worker.pid} on ${stack.server.address}; ${runs} runs parked for a human, then all approved at once`);
    const ids: string[] = [];
    const parkStart = Date.now();
    for (let i = 0; i < runs; i += 50) {
      ids.push(...(await Promise.all(Array.from({ length: Math.min(50, runs - i) }, () => client.run('evaluate-optimize', input, { id: uniqueName('parked') }).then((r) => r.workflowId)))));
    }
    const parked = `TaskQueue = '${stack.env.LOOPWRIGHT_TASK_QUEUE}' AND LoopState = 'awaiting_human' AND ExecutionStatus = 'Running'`;
    while ((await client.temporal.workflow.count(parked)).count < runs) await new Promise((r) => setTimeout(r, 500));
    const parkSeconds = (Date.now() - parkStart) / 1000;
    // Let the worker settle (its caches and GC) before the reading that counts.
    await new Promise((r) => setTimeout(r, 5000));
    const after = stack.rss();
    console.log(`parked ${runs} in ${parkSeconds.toFixed(1)} s (load ${load1()}); worker RSS ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB parked: +${(after - before).toFixed(0)} MiB`);

    const approveStart = Date.now();
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const t0 = Date.now();
        let error: string | undefined;
        try {
          await client.decide(id, { kind: 'approve', by: 'bench' });
        } catch (err) {
          error = err instanceof Error ? err.message : String(err);
        }
        const record = (await client.temporal.workflow.getHandle(id).result()) as RunRecord;
        const applied = record.decisions.filter((d) => d.status === 'applied').length === 1 && record.state === 'completed';
        return { ms: Date.now() - t0, error, applied };
      }),
    );
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    const errors = outcomes.filter((o) => o.error);
    const falseErrors = errors.filter((o) => o.applied);
    console.log(`approved ${runs} at once in ${((Date.now() - approveStart) / 1000).toFixed(1)} s (load ${load1()}): decision -> closed p50 ${(percentile(ms, 50) / 1000).toFixed(2)} s, p95 ${(percentile(ms, 95) / 1000).toFixed(2)} s, max ${(ms.at(-1)! / 1000).toFixed(2)} s`);
    console.log(`approvals that reported an error: ${errors.length} (of which the run had applied it: ${falseErrors.length}); runs not completed with one applied approval: ${outcomes.filter((o) => !o.applied).length}`);
    if (errors.length) console.log(`first error: ${errors[0].error}`);
    console.log(`worker RSS after: ${stack.rss().toFixed(0)} MiB`);
  } finally {
    await stack.close();
  }
}

if (require.main === module) {
  const runs = Number(process.argv[2] ?? 1000);
  if (!Number.isInteger(runs) || runs <= 0) {
    console.error(`error: give the number of runs as a whole number above 0, not ${process.argv[2]}`);
    process.exit(2);
  }
  main(runs, process.argv.slice(3)).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
