import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ClaimCheckCodec, PayloadStore } from '../../crypto/claim-check';
import { EncryptionCodec } from '../../crypto/codec';
import { decodeHistory, encodeHistory } from '../../crypto/decode-history';
import { newKey, newKeyId, parseKeyFile } from '../../crypto/keyring';
import type { loopWorkflow } from '../../workflows/loop/loop-workflow';
import { parseModelScript, type ModelRule, type ModelScript } from '../../model-server/script';
import { plainModelCaller, runPlainLoop } from './plain-loop';
import { procCpuSeconds, selfCpuSeconds } from './proc-cpu';
import { uniqueName } from './session';
import { floorLoop, type FloorExtras } from './floor-workflows';
import { historyBreakdown, type BreakdownRow } from './history-breakdown';
import type { BenchStack, FloorWorker } from './worker-stack';

/** The task every measured run does: attempt 1 fails the judge, attempt 2 passes. */
export const THROUGHPUT_INPUT = {
  task: 'Write a haiku about durable execution.',
  rubric: ['has three lines', 'mentions a crash'],
  maxAttempts: 3,
};
/** Model calls each run makes: worker, judge (fail), worker, judge (pass). */
export const CALLS_PER_RUN = 4;

/** Prefix of the run ids measured at `latencyMs`: the scripted model's rules match on it. */
export const latencyTag = (latencyMs: number): string => `lat${latencyMs}ms`;

/**
 * The scripted model of the throughput bench: for each latency, a worker that answers and a judge
 * that fails attempt 1 and passes attempt 2, each reply `latencyMs` late, for runs whose id holds
 * {@link latencyTag}. No rule has `times`: they never run out.
 */
export function throughputScript(latencies: number[]): ModelScript {
  const rules = latencies.flatMap((latencyMs): ModelRule[] => {
    const tag = latencyTag(latencyMs);
    const delay = latencyMs > 0 ? { delayMs: latencyMs } : {};
    const worker = (attempt: number, text: string): ModelRule => ({
      name: `${tag} worker ${attempt}`,
      match: { role: 'worker', attempt, workflowId: `${tag}-` },
      ...delay,
      reply: { content: [{ type: 'text', text }], usage: { input_tokens: 100, output_tokens: 20 } },
    });
    const judge = (attempt: number, passed: boolean): ModelRule => ({
      name: `${tag} judge ${attempt} ${passed ? 'passes' : 'fails'}`,
      match: { role: 'checker', attempt, workflowId: `${tag}-` },
      ...delay,
      reply: {
        content: [
          {
            type: 'tool_use',
            name: 'submit_verdict',
            input: passed
              ? { passed, reason: 'meets the rubric', failed_items: [], required_correction: '' }
              : {
                  passed,
                  reason: 'no crash in it',
                  failed_items: ['mentions a crash'],
                  required_correction: 'mention a crash',
                },
          },
        ],
        usage: { input_tokens: 50, output_tokens: 10 },
      },
    });
    return [
      worker(1, 'Events in order\nreplayed from the history\nstate comes back whole'),
      judge(1, false),
      worker(2, 'The worker crashes\nhistory replays each event\nthe loop carries on'),
      judge(2, true),
    ];
  });
  return parseModelScript({ rules }, 'throughput bench');
}

/**
 * One measurement: runs at once (`atOnce` of them, in one or more rounds: `combineRounds`), one
 * path, one model latency. CPU in seconds; `runs` and the CPU and wall time are the rounds' sums.
 */
export interface Measurement {
  /** plain: no durability; floor: the bare Temporal workflow (floor-workflows.ts); loopwright: `evaluate-optimize`. */
  path: 'plain' | 'floor' | `floor+${string}` | 'loopwright';
  latencyMs: number;
  runs: number;
  /** Runs started at once in each round (N). */
  atOnce: number;
  /** Rounds summed into this measurement. */
  rounds: number;
  /** Runs that did not end as expected (judge passed on attempt 2; for Loopwright, state completed). */
  failed: number;
  wallSeconds: number;
  /** Dev server's and worker process's CPU (NaN for the plain loop, which has neither). */
  serverCpu: number;
  workerCpu: number;
  /** This process: the client, and the scripted model server, which runs here too. */
  clientCpu: number;
  modelCallsPerRun: number;
  /** Mean over a few runs' histories (NaN for the plain loop). */
  historyEvents: number;
  historyBytes: number;
  /**
   * The same histories' bytes had their payloads been sealed by a worker with a key ring (the
   * demo's default): each payload run through the encryption codec (`encodeHistory`).
   */
  historySealedBytes: number;
  /**
   * The same histories' bytes with the claim check (LOOPWRIGHT_PAYLOAD_STORE, crypto/claim-check.ts):
   * measured when the bench runs with it, else each payload of the clear histories run through
   * the claim-check codec into a scratch store (`encodeHistory`; test/e2e/claim-check.test.ts
   * measures a real run's).
   */
  historyClaimCheckedBytes: number;
  /** Where the first sampled history's bytes go (empty for the plain loop). */
  historyBreakdown: BreakdownRow[];
  /** 1-minute load average when the measurement started and when it ended. */
  loadStart: number;
  loadEnd: number;
}

type History = temporal.api.history.v1.IHistory;

const historyBytes = (h: History): number => temporal.api.history.v1.History.encode(h).finish().length;

/**
 * What `history` would weigh sealed with a throwaway key ring (a key id as `keys init` makes): see
 * {@link Measurement.historySealedBytes}. `codecs` are the client's: a history claim-checked
 * (LOOPWRIGHT_PAYLOAD_STORE) is read back in clear first, then sealed and claim-checked again in
 * the order a keyed worker applies them, so small sealed payloads stay in it as they would.
 */
async function sealedHistoryBytes(history: History, codecs: readonly PayloadCodec[]): Promise<number> {
  const copy = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
  const claimCheck = codecs.filter((c) => c instanceof ClaimCheckCodec);
  const clear = claimCheck.length > 0 ? await decodeHistory(copy, claimCheck) : copy;
  return historyBytes(
    await encodeHistory(clear, [
      new EncryptionCodec(parseKeyFile(`${newKeyId()}=${newKey()}`, 'bench')),
      ...claimCheck,
    ]),
  );
}

/** What `history` weighs claim-checked: see {@link Measurement.historyClaimCheckedBytes}. */
async function claimCheckedHistoryBytes(history: History, codecs: readonly PayloadCodec[]): Promise<number> {
  if (codecs.some((c) => c instanceof ClaimCheckCodec)) return historyBytes(history);
  const copy = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
  const scratch = mkdtempSync(path.join(tmpdir(), 'lw-bench-claim-check-'));
  try {
    return historyBytes(await encodeHistory(copy, [new ClaimCheckCodec(new PayloadStore(scratch))]));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const callsOf = (stack: BenchStack, prefix: string): number =>
  stack.model.requests.filter((r) => r.workflowId?.startsWith(prefix)).length;

/** `runs` plain loops at once (see plain-loop.ts) against the stack's scripted model. */
export async function measurePlain(stack: BenchStack, runs: number, latencyMs: number): Promise<Measurement> {
  const callModel = plainModelCaller(stack.model.url);
  const prefix = uniqueName(`${latencyTag(latencyMs)}-plain`);
  const [load0, cpu0, t0] = [loadavg()[0] ?? NaN, selfCpuSeconds(), performance.now()];
  const results = await Promise.all(
    Array.from({ length: runs }, (_, i) =>
      runPlainLoop(
        callModel,
        `${prefix}-${i}`,
        THROUGHPUT_INPUT.task,
        THROUGHPUT_INPUT.rubric,
        THROUGHPUT_INPUT.maxAttempts,
      ),
    ),
  );
  const [wall, cpu] = [(performance.now() - t0) / 1000, selfCpuSeconds() - cpu0];
  return {
    path: 'plain',
    latencyMs,
    runs,
    atOnce: runs,
    rounds: 1,
    failed: results.filter((r) => !r.passed || r.attempts !== 2).length,
    wallSeconds: wall,
    serverCpu: NaN,
    workerCpu: NaN,
    clientCpu: cpu,
    modelCallsPerRun: callsOf(stack, prefix) / runs,
    historyEvents: NaN,
    historyBytes: NaN,
    historySealedBytes: NaN,
    historyClaimCheckedBytes: NaN,
    historyBreakdown: [],
    loadStart: load0,
    loadEnd: loadavg()[0] ?? NaN,
  };
}

/**
 * `runs` `evaluate-optimize` runs started at once on the stack's worker, each awaited through its
 * result; then the histories of `historySample` of them are fetched and measured (after the clock
 * and the CPU readings stop).
 */
export function measureLoopwright(
  stack: BenchStack,
  runs: number,
  latencyMs: number,
  historySample = 5,
): Promise<Measurement> {
  return measureDurable(stack, 'loopwright', stack.worker.pid!, runs, latencyMs, historySample, async (id) => {
    const { workflowId } = await stack.client.run('evaluate-optimize', THROUGHPUT_INPUT, { id });
    const record = await stack.client.temporal.workflow.getHandle<typeof loopWorkflow>(workflowId).result();
    return record.state === 'completed' && record.attempts.length === 2;
  });
}

/**
 * The same, through the floor (floor-workflows.ts): the bare Temporal workflow making the same 4
 * model calls on `floor`'s worker process. Its CPU is the floor worker's, not Loopwright's.
 */
export function measureFloor(
  stack: BenchStack,
  floor: FloorWorker,
  runs: number,
  latencyMs: number,
  extras: FloorExtras = {},
  historySample = 5,
): Promise<Measurement> {
  const added = Object.keys(extras).filter((k) => extras[k as keyof FloorExtras]);
  const path = added.length ? (`floor+${added.join('+')}` as const) : 'floor';
  return measureDurable(stack, path, floor.process.pid!, runs, latencyMs, historySample, async (workflowId) => {
    const result = await stack.client.temporal.workflow.execute(floorLoop, {
      workflowId,
      taskQueue: floor.taskQueue,
      args: [THROUGHPUT_INPUT.task, THROUGHPUT_INPUT.rubric, THROUGHPUT_INPUT.maxAttempts, extras],
    });
    return result.passed && result.attempts === 2;
  });
}

/** `runs` durable runs at once, started and awaited by `run(id)` (true when it ended as expected), with `workerPid`'s CPU. */
async function measureDurable(
  stack: BenchStack,
  path: Measurement['path'],
  workerPid: number,
  runs: number,
  latencyMs: number,
  historySample: number,
  run: (workflowId: string) => Promise<boolean>,
): Promise<Measurement> {
  const { client } = stack;
  const prefix = uniqueName(`${latencyTag(latencyMs)}-${path.replace(/\W/g, '-')}`);
  const cpu = () => ({
    server: procCpuSeconds(stack.server.pid),
    worker: procCpuSeconds(workerPid),
    client: selfCpuSeconds(),
  });
  const [load0, cpu0, t0] = [loadavg()[0] ?? NaN, cpu(), performance.now()];
  const results = await Promise.all(
    Array.from({ length: runs }, async (_, i) => ({ workflowId: `${prefix}-${i}`, ok: await run(`${prefix}-${i}`) })),
  );
  const [wall, cpu1, load1] = [(performance.now() - t0) / 1000, cpu(), loadavg()[0] ?? NaN];
  const histories = await Promise.all(
    results.slice(0, historySample).map((r) => client.temporal.workflow.getHandle(r.workflowId).fetchHistory()),
  );
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    path,
    latencyMs,
    runs,
    atOnce: runs,
    rounds: 1,
    failed: results.filter((r) => !r.ok).length,
    wallSeconds: wall,
    serverCpu: cpu1.server - cpu0.server,
    workerCpu: cpu1.worker - cpu0.worker,
    clientCpu: cpu1.client - cpu0.client,
    modelCallsPerRun: callsOf(stack, prefix) / runs,
    historyEvents: mean(histories.map((h) => h.events?.length ?? 0)),
    historyBytes: mean(histories.map(historyBytes)),
    historySealedBytes: mean(
      await Promise.all(
        histories.map((h) => sealedHistoryBytes(h, client.temporal.options.loadedDataConverter.payloadCodecs)),
      ),
    ),
    historyClaimCheckedBytes: mean(
      await Promise.all(
        histories.map((h) => claimCheckedHistoryBytes(h, client.temporal.options.loadedDataConverter.payloadCodecs)),
      ),
    ),
    historyBreakdown: histories[0] ? historyBreakdown(histories[0]) : [],
    loadStart: load0,
    loadEnd: load1,
  };
}

/** CPU ms per second the dev server and the worker use with nothing to do (polls, timers), over `seconds`. */
export async function measureIdle(
  stack: BenchStack,
  seconds: number,
): Promise<{ serverMsPerSecond: number; workerMsPerSecond: number }> {
  const [s0, w0] = [procCpuSeconds(stack.server.pid), procCpuSeconds(stack.worker.pid!)];
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const [s1, w1] = [procCpuSeconds(stack.server.pid), procCpuSeconds(stack.worker.pid!)];
  return { serverMsPerSecond: ((s1 - s0) * 1000) / seconds, workerMsPerSecond: ((w1 - w0) * 1000) / seconds };
}

/**
 * The rounds of one path at one latency as one measurement: runs, failures, wall time and CPU
 * summed (so per-run figures and runs/s are over every round), history from the rounds' mean,
 * load from the first round's start to the last round's end.
 */
export function combineRounds(rounds: Measurement[]): Measurement {
  const [first, ...rest] = rounds;
  if (!first) throw new Error('combineRounds needs at least one round');
  const sum = (get: (m: Measurement) => number) => rounds.reduce((s, m) => s + get(m), 0);
  const runs = sum((m) => m.runs);
  return {
    ...first,
    runs,
    rounds: rounds.length,
    failed: sum((m) => m.failed),
    wallSeconds: sum((m) => m.wallSeconds),
    serverCpu: sum((m) => m.serverCpu),
    workerCpu: sum((m) => m.workerCpu),
    clientCpu: sum((m) => m.clientCpu),
    modelCallsPerRun: sum((m) => m.modelCallsPerRun * m.runs) / runs,
    historyEvents: sum((m) => m.historyEvents) / rounds.length,
    historyBytes: sum((m) => m.historyBytes) / rounds.length,
    historySealedBytes: sum((m) => m.historySealedBytes) / rounds.length,
    historyClaimCheckedBytes: sum((m) => m.historyClaimCheckedBytes) / rounds.length,
    loadEnd: (rest.at(-1) ?? first).loadEnd,
  };
}
