/**
 * Parked runs: M `evaluate-optimize` runs that wait for a human (a `human` check), on a
 * `loopwright worker` process (as deployed) and a dev server this script starts. Prints the
 * worker's RSS before and after parking them, then approves all M at once and prints the time
 * from each decision to its run's close (p50, p95, max) and how many approvals reported an
 * error (each approval's answer is checked against the run's record):
 *   npm run bench:parked -- [runs=1000] [worker flags, e.g. --max-cached-workflows 2000]
 * `npm run bench` (throughput.ts) calls {@link measureParked} too.
 */
import { parseModelScript } from '../../model-server/script';
import type { loopWorkflow } from '../../workflows/loop-workflow';
import { uniqueName } from './session';
import { allOf, clause } from '../../common/visibility-query';
import { load1, startBenchStack } from './worker-stack';

/** The `p`th percentile (nearest rank) of ascending `sorted`. */
export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN; // NaN for no values

/** What {@link measureParked} measured. Times in seconds, memory in MiB. */
export interface ParkedFigures {
  runs: number;
  workerPid: number;
  parkSeconds: number;
  /** Load average (1 min) once all runs were parked, and once all were approved. */
  loadParked: string;
  loadApproved: string;
  rssBefore: number;
  /** RSS with all runs parked, after 5 s to settle. */
  rssParked: number;
  /** RSS once every approved run has closed. */
  rssAfter: number;
  approveSeconds: number;
  /** Decision sent to the run's close, per run. */
  p50: number;
  p95: number;
  max: number;
  /** Approvals whose call reported an error. */
  errors: number;
  /** Of those, approvals the run had in fact applied (completed with exactly one applied decision). */
  falseErrors: number;
  /** Runs that did not complete with exactly one applied approval. */
  notApplied: number;
  firstError?: string;
}

/**
 * Parks `runs` runs for a human on a fresh bench stack (`workerArgs` go to `loopwright worker`),
 * reads the worker's RSS, approves them all at once and returns the figures; `log` gets progress.
 * Stops every server it started.
 */
export async function measureParked(
  runs: number,
  workerArgs: string[] = [],
  log: (line: string) => void = console.log,
): Promise<ParkedFigures> {
  const script = parseModelScript(
    {
      rules: [
        {
          name: 'draft',
          match: { role: 'worker' },
          reply: { content: [{ type: 'text', text: 'a draft' }], usage: { input_tokens: 100, output_tokens: 20 } },
        },
      ],
    },
    'parked bench',
  );
  const stack = await startBenchStack(script, workerArgs);
  const { client } = stack;
  try {
    const input = { task: 'Write a draft.', checks: [{ kind: 'human', name: 'editor' }] };
    const rssBefore = stack.rss();
    log(
      `worker pid ${stack.worker.pid} on ${stack.server.address}; ${runs} runs parked for a human, then all approved at once`,
    );
    const ids: string[] = [];
    const parkStart = Date.now();
    for (let i = 0; i < runs; i += 50) {
      ids.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, runs - i) }, () =>
            client.run('evaluate-optimize', input, { id: uniqueName('parked') }).then((r) => r.workflowId),
          ),
        )),
      );
    }
    const parked = allOf(
      clause('TaskQueue', stack.env.LOOPWRIGHT_TASK_QUEUE!),
      clause('LoopState', 'awaiting_human'),
      clause('ExecutionStatus', 'Running'),
    );
    while ((await client.temporal.workflow.count(parked)).count < runs) await new Promise((r) => setTimeout(r, 500));
    const parkSeconds = (Date.now() - parkStart) / 1000;
    // Let the worker settle (its caches and GC) before the reading that counts.
    await new Promise((r) => setTimeout(r, 5000));
    const rssParked = stack.rss();
    const loadParked = load1();
    log(
      `parked ${runs} in ${parkSeconds.toFixed(1)} s (load ${loadParked}); worker RSS ${rssBefore.toFixed(0)} MiB before, ${rssParked.toFixed(0)} MiB parked: +${(rssParked - rssBefore).toFixed(0)} MiB`,
    );

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
        const record = await client.temporal.workflow.getHandle<typeof loopWorkflow>(id).result();
        const applied =
          record.decisions.filter((d) => d.status === 'applied').length === 1 && record.state === 'completed';
        return { ms: Date.now() - t0, error, applied };
      }),
    );
    const approveSeconds = (Date.now() - approveStart) / 1000;
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    const errors = outcomes.filter((o) => o.error);
    return {
      runs,
      workerPid: stack.worker.pid!,
      parkSeconds,
      loadParked,
      loadApproved: load1(),
      rssBefore,
      rssParked,
      rssAfter: stack.rss(),
      approveSeconds,
      p50: percentile(ms, 50) / 1000,
      p95: percentile(ms, 95) / 1000,
      max: ms.at(-1)! / 1000,
      errors: errors.length,
      falseErrors: errors.filter((o) => o.applied).length,
      notApplied: outcomes.filter((o) => !o.applied).length,
      ...(errors[0] ? { firstError: errors[0].error } : {}),
    };
  } finally {
    await stack.close();
  }
}

async function main(runs: number, workerArgs: string[]): Promise<void> {
  const f = await measureParked(runs, workerArgs);
  console.log(
    `approved ${runs} at once in ${f.approveSeconds.toFixed(1)} s (load ${f.loadApproved}): decision -> closed p50 ${f.p50.toFixed(2)} s, p95 ${f.p95.toFixed(2)} s, max ${f.max.toFixed(2)} s`,
  );
  console.log(
    `approvals that reported an error: ${f.errors} (of which the run had applied it: ${f.falseErrors}); runs not completed with one applied approval: ${f.notApplied}`,
  );
  if (f.firstError) console.log(`first error: ${f.firstError}`);
  console.log(`worker RSS after: ${f.rssAfter.toFixed(0)} MiB`);
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
