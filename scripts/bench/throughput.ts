/**
 * Throughput against issue 17's targets, measured in one run: N runs at once of a loop whose 4
 * model calls are worker, judge fails, worker, judge passes, against one scripted model with 0 ms
 * and then 200 ms of latency per call, done two ways side by side:
 * - plain: the calls in a plain in-process loop (real SDK, same prompts, no durability);
 * - floor: the bare Temporal workflow making the same calls (floor-workflows.ts: no record, budget,
 *   search attributes or decisions) on its own worker process, on the same dev server: what
 *   durability costs on this server before Loopwright adds anything;
 * - loopwright: `evaluate-optimize` runs on a dev server and a separate `loopwright worker` process.
 * For each: wall time, runs/s, CPU seconds of the dev server, the worker and this process (the
 * client and the scripted model), CPU per run, history per run, and the load average. Then M runs
 * parked for a human and approved at once (parked.ts, on a fresh stack). Last, the targets.
 *   npm run bench -- [N=200] [M=1000]     (M=0 skips the parked case)
 *   npm run bench -- --quick              (N=20, M=50, 1 round)
 *   npm run bench -- --rounds R           each path measured R times (default 2), N at once each
 *                                         time, the floor and Loopwright in turn, which goes first
 *                                         alternating by round: the machine's drift and whatever
 *                                         one path leaves the server to do (SQLite checkpoints)
 *                                         fall on both; the table sums the rounds
 *   npm run bench -- --attribute          also the floor with each of Loopwright's own server costs
 *                                         added alone (FloorExtras), at 0 ms, to price each one
 */
import { cpus, loadavg } from 'node:os';
import type { FloorExtras } from './floor-workflows';
import { formatBreakdown } from './history-breakdown';
import { measureParked, type ParkedFigures } from './parked';
import {
  combineRounds,
  measureFloor,
  measureIdle,
  measureLoopwright,
  measurePlain,
  throughputScript,
  type Measurement,
} from './throughput-measure';
import { cpuMsPerRun, formatMeasurements, formatParked, formatTargets } from './throughput-report';
import { startBenchStack, startFloorWorker, type FloorWorker } from './worker-stack';

const LATENCIES = [0, 200];
const WARM_UP = 10;
/** The floor's extras priced one at a time by --attribute, then all together. */
const ATTRIBUTION: FloorExtras[] = [
  { upserts: true },
  { heartbeats: true },
  { setupActivity: true },
  { upserts: true, heartbeats: true, setupActivity: true },
];

function parseArgs(argv: string[]): { runs: number; parked: number; attribute: boolean; rounds: number } {
  const quick = argv.includes('--quick');
  const attribute = argv.includes('--attribute');
  const at = argv.indexOf('--rounds');
  const rest = argv.filter((a, i) => a !== '--quick' && a !== '--attribute' && (at < 0 || (i !== at && i !== at + 1)));
  const [runs, parked] = [Number(rest[0] ?? (quick ? 20 : 200)), Number(rest[1] ?? (quick ? 50 : 1000))];
  const rounds = at < 0 ? (quick ? 1 : 2) : Number(argv[at + 1]);
  if (
    rest.length > 2 ||
    !Number.isInteger(runs) ||
    runs <= 0 ||
    !Number.isInteger(parked) ||
    parked < 0 ||
    !Number.isInteger(rounds) ||
    rounds < 1 ||
    rounds > 10
  ) {
    console.error(
      `error: usage: npm run bench -- [N runs at once, above 0] [M parked runs, 0 to skip] [--quick] [--attribute] [--rounds 1..10], not ${argv.join(' ')}`,
    );
    process.exit(2);
  }
  return { runs, parked, attribute, rounds };
}

async function main(): Promise<void> {
  const { runs, parked, attribute, rounds } = parseArgs(process.argv.slice(2));
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; node ${process.version}`,
  );
  const stack = await startBenchStack(throughputScript(LATENCIES));
  const measured: Measurement[] = [];
  let idleLine = '';
  let floor: FloorWorker | undefined;
  try {
    const floorWorker = await startFloorWorker(stack);
    floor = floorWorker;
    console.log(
      `dev server pid ${stack.server.pid}, worker pid ${stack.worker.pid}, floor worker pid ${floorWorker.process.pid}; warming up with ${WARM_UP} runs each way (not counted)`,
    );
    const measureFloorHere = (s: typeof stack, n: number, latencyMs: number) =>
      measureFloor(s, floorWorker, n, latencyMs);
    await measurePlain(stack, WARM_UP, 0);
    await measureFloorHere(stack, WARM_UP, 0);
    await measureLoopwright(stack, WARM_UP, 0, 0);
    const idle = await measureIdle(stack, 5);
    idleLine = `idle (5 s, no runs): dev server ${idle.serverMsPerSecond.toFixed(1)} ms CPU/s, worker ${idle.workerMsPerSecond.toFixed(1)} ms CPU/s (counted in the figures above, not subtracted)`;
    for (const latencyMs of LATENCIES) {
      const byPath = new Map<string, Measurement[]>();
      for (let round = 1; round <= rounds; round++) {
        const durable = round % 2 === 1 ? [measureFloorHere, measureLoopwright] : [measureLoopwright, measureFloorHere];
        for (const measure of [measurePlain, ...durable]) {
          const m = await measure(stack, runs, latencyMs);
          console.log(
            `  ${m.path} at ${latencyMs} ms, round ${round}: ${runs} runs in ${m.wallSeconds.toFixed(1)} s, ${cpuMsPerRun(m).toFixed(1)} ms CPU/run`,
          );
          byPath.set(m.path, [...(byPath.get(m.path) ?? []), m]);
        }
      }
      for (const ms of byPath.values()) measured.push(combineRounds(ms));
    }
    if (attribute) {
      for (const extras of ATTRIBUTION) {
        const m = await measureFloor(stack, floorWorker, runs, 0, extras);
        console.log(`  ${m.path} at 0 ms: ${runs} runs in ${m.wallSeconds.toFixed(1)} s`);
        measured.push(m);
      }
    }
  } finally {
    await floor?.close();
    await stack.close();
  }
  let parkedFigures: ParkedFigures | undefined;
  if (parked > 0) parkedFigures = await measureParked(parked, [], (line) => console.log(`  ${line}`));

  console.log(
    `\nN=${runs} runs at once, 4 model calls each (worker, judge fails, worker, judge passes), per model latency, ${rounds} round${rounds === 1 ? '' : 's'} each (summed):`,
  );
  for (const line of formatMeasurements(measured)) console.log(line);
  console.log(
    'CPU ms/run: dev server + worker for floor and loopwright (each its own worker process); this process (loop + scripted model) for plain. client CPU s: this process, which also serves the scripted model.',
  );
  console.log(idleLine);
  const sample = measured.find((m) => m.path === 'loopwright' && m.historyBreakdown.length > 0);
  if (sample) {
    console.log(`\nWhere a Loopwright run's history goes (one run at ${sample.latencyMs} ms):`);
    for (const line of formatBreakdown(sample.historyBreakdown)) console.log(line);
  }
  if (parkedFigures) {
    console.log(`\nParked (fresh stack, default worker flags):`);
    for (const line of formatParked(parkedFigures)) console.log(line);
  }
  console.log('\nIssue 17 targets:');
  for (const line of formatTargets(measured, parkedFigures, {
    claimCheck: Boolean(process.env.LOOPWRIGHT_PAYLOAD_STORE?.trim()),
  }))
    console.log(line);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
