import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import { CLAIM_CHECK_ENCODING } from '../../crypto/claim-check';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { eventBytes } from '../../scripts/bench/measure-history';
import { THROUGHPUT_INPUT, latencyTag, throughputScript } from '../../scripts/bench/throughput-measure';
import { runCli, startWorkerProcess, stopWorkerProcesses } from '../helpers/cli';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * The claim check end to end (crypto/claim-check.ts, LOOPWRIGHT_PAYLOAD_STORE): the benchmark's
 * run (4 model calls: worker, judge fails, worker, judge passes) on a real `loopwright worker`,
 * started and read with the real CLI, keeps its large payloads in the store and its history
 * under issue 17's 8 KB; every reader with the store reads the run as before, and one without it
 * is told what to set.
 */
let model: ModelServer;
let store: string;
let env: Record<string, string | undefined>;
let client: LoopwrightClient;

beforeAll(async () => {
  model = await startModelServer({ script: throughputScript([0]), port: 0 });
  store = mkdtempSync(path.join(tmpdir(), 'lw-payload-store-'));
  // In clear (no key ring): the figure the target is about, and the store's files can be read here.
  env = { ...workerProcessEnv('claim-check', model.url), LOOPWRIGHT_KEYS: '', LOOPWRIGHT_PAYLOAD_STORE: store };
  await startWorkerProcess(env);
  client = await LoopwrightClient.connect({ env });
}, 120_000);
afterAll(async () => {
  await client?.close();
  await stopWorkerProcesses();
  await model?.close();
  rmSync(store, { recursive: true, force: true });
});

test('the benchmark’s run keeps its spec, model calls and record in the store, and its history is at most 8 KB', async () => {
  const id = `${latencyTag(0)}-claim-${randomBytes(4).toString('hex')}`;
  const started = await runCli(
    ['run', 'evaluate-optimize', '--input', JSON.stringify(THROUGHPUT_INPUT), '--id', id, '--wait'],
    env,
    120_000,
  );
  expect(started.code).toBe(0);
  expect(started.stderr).toMatch(/completed +attempt 2\/3/);

  const history = await client.temporal.workflow.getHandle(id).fetchHistory();
  const events = history.events ?? [];
  const bytes = events.reduce((sum, e) => sum + eventBytes(e), 0);
  expect(bytes).toBeLessThanOrEqual(8 * 1024);
  // The start input (the loop spec) and the result (the record) are claim checks in the history...
  const encoding = (p: { metadata?: Record<string, Uint8Array> | null } | undefined) =>
    new TextDecoder().decode(p?.metadata?.encoding ?? new Uint8Array());
  expect(encoding(events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0])).toBe(CLAIM_CHECK_ENCODING);
  expect(encoding(events.at(-1)?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0])).toBe(
    CLAIM_CHECK_ENCODING,
  );
  // ...and nothing of the task, the answers or the verdicts is written in it.
  const raw = Buffer.concat(events.map((e) => Buffer.from(JSON.stringify(e)))).toString();
  for (const text of ['durable execution', 'replayed from the history', 'no crash in it'])
    expect(raw).not.toContain(text);
  // The store holds them, each file named by its content's SHA-256.
  const stored = readdirSync(store, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  expect(stored.length).toBeGreaterThanOrEqual(4);
  const all = stored.map((e) => readFileSync(path.join(e.parentPath, e.name), 'latin1')).join('\n');
  for (const text of ['durable execution', 'the loop carries on', 'no crash in it']) expect(all).toContain(text);

  // Readers with the store read the run as before: the client's record, the CLI's status and trace.
  const record = await client.status(id);
  expect(record).toMatchObject({
    state: 'completed',
    attempt: 2,
    output: expect.stringContaining('the loop carries on'),
  });
  const status = await runCli(['status', id, '--json'], env);
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({ state: 'completed', task: THROUGHPUT_INPUT.task });
  const trace = await runCli(['trace', id], env);
  expect(trace.code).toBe(0);
  expect(trace.stdout).toContain('no crash in it');

  // A reader without it gets one line saying what to set (exit 2), not Temporal's "Unknown encoding".
  const blind = await runCli(['status', id], { ...env, LOOPWRIGHT_PAYLOAD_STORE: '' });
  expect(blind.code).toBe(2);
  expect(blind.stderr.trim().split('\n')).toHaveLength(1);
  expect(blind.stderr).toMatch(/^error: .*is claim-checked .*set LOOPWRIGHT_PAYLOAD_STORE to the folder they write/);
}, 180_000);

test('with a key ring too: the store holds the sealed payloads, and the history stays at most 8 KB', async () => {
  const keys = process.env.LOOPWRIGHT_KEYS;
  if (!keys) throw new Error('the suite runs with a key ring (test/global-setup): LOOPWRIGHT_KEYS is not set');
  const sealedStore = mkdtempSync(path.join(tmpdir(), 'lw-payload-store-sealed-'));
  try {
    const keyed = {
      ...workerProcessEnv('claim-check-sealed', model.url),
      LOOPWRIGHT_KEYS: keys,
      LOOPWRIGHT_PAYLOAD_STORE: sealedStore,
    };
    await startWorkerProcess(keyed);
    const id = `${latencyTag(0)}-claim-sealed-${randomBytes(4).toString('hex')}`;
    const started = await runCli(
      ['run', 'evaluate-optimize', '--input', JSON.stringify(THROUGHPUT_INPUT), '--id', id, '--wait'],
      keyed,
      120_000,
    );
    expect(started.code).toBe(0);
    const reader = await LoopwrightClient.connect({ env: keyed });
    try {
      const history = await reader.temporal.workflow.getHandle(id).fetchHistory();
      const events = history.events ?? [];
      expect(events.reduce((sum, e) => sum + eventBytes(e), 0)).toBeLessThanOrEqual(8 * 1024);
      expect(await reader.status(id)).toMatchObject({ state: 'completed', attempt: 2 });
    } finally {
      await reader.close();
    }
    const stored = readdirSync(sealedStore, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(stored.length).toBeGreaterThanOrEqual(2);
    const all = stored.map((e) => readFileSync(path.join(e.parentPath, e.name), 'latin1')).join('\n');
    expect(all).toContain('binary/encrypted');
    for (const text of ['durable execution', 'the loop carries on', 'no crash in it']) expect(all).not.toContain(text);
  } finally {
    rmSync(sealedStore, { recursive: true, force: true });
  }
}, 180_000);
