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
import type { loopWorkflow } from '../../workflows/loop/loop-workflow';
import { allOf, clause } from '../../common/visibility-query';
import { uniqueName } from './session';
import { procCpuSeconds } from './proc-cpu';
import { formatParked } from './throughput-report';
import { floorApprove, floorParked } from './floor-workflows';
import { load1, rssMiB, startBenchStack, startFloorWorker, type BenchStack } from './worker-stack';

/** The `p`th percentile (nearest rank) of ascending `sorted`. */
export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN; // NaN for no values

/** Parked runs approved all at once, as measured for Loopwright and for the floor. Times in seconds, memory in MiB. */
export interface FloorParkedFigures {
  /** Worker RSS before parking, and with all runs parked (after 5 s to settle). */
  rssBefore: number;
  rssParked: number;
  approveSeconds: number;
  /** CPU seconds the dev server and the worker used while the approvals ran. */
  approveCpu: { server: number; worker: number };
  /** Decision sent to the run's close, per run. */
  p50: number;
  p95: number;
  max: number;
  /** Approvals whose call reported an error. */
  errors: number;
  /** Load average (1 min) once all were approved. */
  loadApproved: string;
}

/** What {@link measureParked} measured: Loopwright's figures, and the floor's on the same server. */
export interface ParkedFigures extends FloorParkedFigures {
  runs: number;
  workerPid: number;
  parkSeconds: number;
  /** Load average (1 min) once all runs were parked. */
  loadParked: string;
  /** RSS once every approved run has closed. */
  rssAfter: number;
  /** Of the errors, approvals the run had in fact applied (completed with exactly one applied decision). */
  falseErrors: number;
  /** Runs that did not complete with exactly one applied approval. */
  notApplied: number;
  firstError?: string;
  /** The same for the floor (floor-workflows.ts `floorParked`) on the same dev server, after Loopwright's. */
  floor?: FloorParkedFigures;
}

/** CPU seconds of the dev server and `workerPid` so far. */
const cpuOf = (stack: BenchStack, workerPid: number) => ({
  server: procCpuSeconds(stack.server.pid),
  worker: procCpuSeconds(workerPid),
});
const cpuSince = (stack: BenchStack, workerPid: number, from: { server: number; worker: number }) => {
  const now = cpuOf(stack, workerPid);
  return { server: now.server - from.server, worker: now.worker - from.worker };
};

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
  const stack = await startBenchStack(script, { workerArgs, heapProbe: true });
  const { client } = stack;
  try {
    const input = { task: 'Write a draft.', checks: [{ kind: 'human', name: 'editor' }] };
    const rssBefore = stack.rss();
    const heapsBefore = stack.heaps();
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
    const heapsParked = stack.heaps();
    const loadParked = load1();
    log(
      `parked ${runs} in ${parkSeconds.toFixed(1)} s (load ${loadParked}); worker RSS ${rssBefore.toFixed(0)} MiB before, ${rssParked.toFixed(0)} MiB parked: +${(rssParked - rssBefore).toFixed(0)} MiB; ` +
        `V8 heaps (MiB) main thread ${heapsBefore.main} → ${heapsParked.main}, workflow thread ${heapsBefore.threads} → ${heapsParked.threads}`,
    );

    const approveStart = Date.now();
    const cpu0 = cpuOf(stack, stack.worker.pid!);
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
    const approveCpu = cpuSince(stack, stack.worker.pid!, cpu0);
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    const errors = outcomes.filter((o) => o.error);
    const figures: ParkedFigures = {
      runs,
      workerPid: stack.worker.pid!,
      parkSeconds,
      loadParked,
      loadApproved: load1(),
      rssBefore,
      rssParked,
      rssAfter: stack.rss(),
      approveSeconds,
      approveCpu,
      p50: percentile(ms, 50) / 1000,
      p95: percentile(ms, 95) / 1000,
      max: ms.at(-1)! / 1000,
      errors: errors.length,
      falseErrors: errors.filter((o) => o.applied).length,
      notApplied: outcomes.filter((o) => !o.applied).length,
      ...(errors[0] ? { firstError: errors[0].error } : {}),
    };
    log(
      `loopwright: approved ${runs} at once in ${approveSeconds.toFixed(1)} s: p50 ${figures.p50.toFixed(2)} s, p95 ${figures.p95.toFixed(2)} s; now the floor on the same server`,
    );
    return { ...figures, floor: await measureFloorParked(stack, runs, log) };
  } finally {
    await stack.close();
  }
}

/**
 * The floor's parked case on `stack`'s dev server: `runs` bare `floorParked` workflows on their own
 * worker process (one model call, then a wait for an approval Update), all approved at once. What
 * Temporal itself costs to resume and close that many runs, before Loopwright adds anything.
 */
async function measureFloorParked(
  stack: BenchStack,
  runs: number,
  log: (line: string) => void,
): Promise<FloorParkedFigures> {
  const floor = await startFloorWorker(stack);
  try {
    const { workflow } = stack.client.temporal;
    const rssBefore = rssMiB(floor.process.pid!);
    const prefix = uniqueName('floor-parked');
    const drafted = () => stack.model.requests.filter((r) => r.workflowId?.startsWith(prefix)).length;
    const handles = [];
    for (let i = 0; i < runs; i += 50) {
      handles.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, runs - i) }, (_, j) =>
            workflow.start(floorParked, {
              workflowId: `${prefix}-${i + j}`,
              taskQueue: floor.taskQueue,
              args: ['Write a draft.'],
            }),
          ),
        )),
      );
    }
    // Every run drafts once (its one model call) and then waits; a run that fails instead would never draft.
    for (let last = -1, since = Date.now(); drafted() < runs; await new Promise((r) => setTimeout(r, 500))) {
      if (drafted() !== last) [last, since] = [drafted(), Date.now()];
      else if (Date.now() - since > 120_000) throw new Error(`floor: only ${last} of ${runs} parked runs drafted`);
    }
    await new Promise((r) => setTimeout(r, 5000));
    const rssParked = rssMiB(floor.process.pid!);
    const approveStart = Date.now();
    const cpu0 = cpuOf(stack, floor.process.pid!);
    const outcomes = await Promise.all(
      handles.map(async (handle) => {
        const t0 = Date.now();
        let error = false;
        try {
          await handle.executeUpdate(floorApprove, { args: ['bench'] });
        } catch {
          error = true;
        }
        await handle.result();
        return { ms: Date.now() - t0, error };
      }),
    );
    const approveSeconds = (Date.now() - approveStart) / 1000;
    const approveCpu = cpuSince(stack, floor.process.pid!, cpu0);
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    log(
      `floor: parked ${runs} (worker RSS ${rssBefore.toFixed(0)} → ${rssParked.toFixed(0)} MiB), approved at once in ${approveSeconds.toFixed(1)} s`,
    );
    return {
      rssBefore,
      rssParked,
      approveSeconds,
      approveCpu,
      p50: percentile(ms, 50) / 1000,
      p95: percentile(ms, 95) / 1000,
      max: (ms.at(-1) ?? NaN) / 1000,
      errors: outcomes.filter((o) => o.error).length,
      loadApproved: load1(),
    };
  } finally {
    await floor.close();
  }
}

async function main(runs: number, workerArgs: string[]): Promise<void> {
  for (const line of formatParked(await measureParked(runs, workerArgs))) console.log(line);
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
