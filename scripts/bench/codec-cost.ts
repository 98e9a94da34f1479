/**
 * The cost of payload encryption: the same N runs (an `evaluate-optimize` agent session of T
 * model turns, each tool turn reading a ~2 KB file) without and with the encryption codec, on a
 * Temporal dev server it starts, in alternating blocks. Prints CPU time per run of this process (worker and client,
 * including the SDK's core threads: process.cpuUsage), wall time, and history bytes and events
 * per run, for both, and the ratios:
 *   npm run bench:codec -- [runs] [turns]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createModelClient } from '../../activities/providers';
import { LoopwrightClient } from '../../client/loopwright-client';
import { workerDataConverter } from '../../crypto/codec';
import { redactionFromEnv } from '../../common/redact';
import { initKeyFile } from '../../crypto/key-file';
import { keyRingFromEnv } from '../../crypto/keyring';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { freePort, startDevServer, type DevServer } from '../../server/dev-server';
import { findTemporalCli } from '../../server/temporal-binary';
import { workflowBundleCode } from '../../workers/bundle';
import { WORKER_TUNING } from '../../workers/create-worker';
import { installRuntime } from '../../workers/runtime';
import { benchScript, makeBenchWorkspace } from './bench-model';
import { eventBytes } from './measure-history';
import { benchInput, uniqueName } from './session';
import { runScript, wholeArgs } from './run-script';

/** What one side measured, per run. */
export interface CodecSide {
  name: string;
  runs: number;
  cpuMs: number;
  wallMs: number;
  historyBytes: number;
  events: number;
}

/** One side's worker and client, warmed up by one run; `block(n)` runs n more and adds up their cost. */
async function side(o: {
  name: string;
  address: string;
  modelUrl: string;
  keys: string;
  code: string;
  turns: number;
  workspace: string;
}) {
  const taskQueue = uniqueName(`bench-codec-${o.name}`);
  const env = {
    ANTHROPIC_BASE_URL: o.modelUrl,
    ANTHROPIC_API_KEY: 'bench',
    TEMPORAL_ADDRESS: o.address,
    LOOPWRIGHT_TASK_QUEUE: taskQueue,
    LOOPWRIGHT_KEYS: o.keys,
  };
  const ring = keyRingFromEnv(env);
  const connection = await NativeConnection.connect({ address: o.address });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: { code: o.code },
    activities: createActivities({ model: createModelClient(env) }),
    dataConverter: workerDataConverter(ring, redactionFromEnv(env)),
    ...WORKER_TUNING,
  });
  const client = await LoopwrightClient.connect({ env });
  const running = worker.run();
  const ids: string[] = [];
  const total = { cpuUs: 0, wallMs: 0 };
  const once = async () => {
    const id = uniqueName(`bench-codec-${o.name}`);
    await client.run('evaluate-optimize', benchInput(o.turns, o.workspace), { id });
    const record = await client.wait(id);
    if (record.state !== 'completed') throw new Error(`bench run ${id} ended ${record.state}: ${record.error ?? ''}`);
    return id;
  };
  await once(); // warm-up: not counted
  return {
    async block(n: number): Promise<void> {
      const cpu = process.cpuUsage();
      const started = Date.now();
      for (let i = 0; i < n; i++) ids.push(await once());
      const used = process.cpuUsage(cpu);
      total.cpuUs += used.user + used.system;
      total.wallMs += Date.now() - started;
    },
    async result(): Promise<CodecSide> {
      let bytes = 0;
      let events = 0;
      for (const id of ids) {
        const history = await client.temporal.workflow.getHandle(id).fetchHistory();
        events += history.events?.length ?? 0;
        bytes += (history.events ?? []).reduce((sum, e) => sum + eventBytes(e), 0);
      }
      const n = ids.length;
      return {
        name: o.name,
        runs: n,
        cpuMs: total.cpuUs / 1000 / n,
        wallMs: total.wallMs / n,
        historyBytes: bytes / n,
        events: events / n,
      };
    },
    async close(): Promise<void> {
      worker.shutdown();
      await running;
      await client.close();
      await connection.close();
    },
  };
}

/** The report: one row per side, then the ratios encrypted / plain. */
export function formatCodecReport(plain: CodecSide, encrypted: CodecSide): string[] {
  const row = (s: CodecSide) =>
    `${s.name.padEnd(10)} ${s.cpuMs.toFixed(1).padStart(12)} ${s.wallMs.toFixed(0).padStart(12)} ${s.historyBytes.toFixed(0).padStart(16)} ${s.events.toFixed(1).padStart(10)}`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  return [
    `${'codec'.padEnd(10)} ${'CPU ms/run'.padStart(12)} ${'wall ms/run'.padStart(12)} ${'history B/run'.padStart(16)} ${'events/run'.padStart(10)}`,
    row(plain),
    row(encrypted),
    `${'ratio'.padEnd(10)} ${ratio(encrypted.cpuMs, plain.cpuMs).padStart(12)} ${ratio(encrypted.wallMs, plain.wallMs).padStart(12)} ${ratio(encrypted.historyBytes, plain.historyBytes).padStart(16)} ${ratio(encrypted.events, plain.events).padStart(10)}`,
  ];
}

async function main(runs: number, turns: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bench-codec-'));
  process.env.LOOPWRIGHT_TRANSCRIPTS = path.join(dir, 'transcripts');
  process.env.LOOPWRIGHT_WORKTREES = path.join(dir, 'worktrees');
  const workspace = makeBenchWorkspace();
  const keys = initKeyFile(path.join(dir, 'keys')).file;
  let server: DevServer | undefined;
  let model: ModelServer | undefined;
  try {
    installRuntime();
    const cli = await findTemporalCli({ log: (line) => console.error(line) });
    const [started, plainCode, encryptedCode] = await Promise.all([
      startDevServer({ cli, dbFile: path.join(dir, 'temporal.db'), port: await freePort(), headless: true }).then(
        (s) => (server = s),
      ),
      workflowBundleCode({ encrypted: false }),
      workflowBundleCode({ encrypted: true }),
    ]);
    model = await startModelServer({ script: benchScript(turns), port: 0 });
    console.log(
      `Temporal dev server ${started.address} (pid ${started.pid}); ${runs} runs of ${turns} model turns each side, after one warm-up run`,
    );
    const common = { address: started.address, modelUrl: model.url, turns, workspace };
    // Blocks alternate (none, AES-GCM, none, ...) so warm-up and server load fall on both sides alike.
    const sides = [
      await side({ ...common, name: 'none', keys: '', code: plainCode }),
      await side({ ...common, name: 'AES-GCM', keys, code: encryptedCode }),
    ] as const;
    const BLOCKS = 4;
    for (let b = 0; b < BLOCKS; b++)
      for (const s of sides) await s.block(Math.floor(runs / BLOCKS) + (b < runs % BLOCKS ? 1 : 0));
    const [plain, encrypted] = [await sides[0].result(), await sides[1].result()];
    for (const s of sides) await s.close();
    console.log('');
    console.log(formatCodecReport(plain, encrypted).join('\n'));
  } finally {
    await model?.close();
    await server?.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [runs, turns] = wholeArgs(
    [20, 5],
    'runs (a whole number, at least 1) and turns (2 to 50)',
    ([r, t]) => r >= 1 && t >= 2 && t <= 50,
  );
  runScript(() => main(runs, turns));
}
