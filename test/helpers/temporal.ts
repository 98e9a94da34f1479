import { randomBytes } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type Activities } from '../../activities';
import { trustPathsFromEnv } from '../../activities/trust';
import type { Tool } from '../../activities/tools/types';
import { createModelClient } from '../../activities/providers';
import { LoopwrightClient } from '../../client/loopwright-client';
import { summaryOf } from '../../trace/history';
import { EncryptionCodec, workerDataConverter } from '../../crypto/codec';
import { decodeHistory } from '../../crypto/decode-history';
import { keyRingFromEnv } from '../../crypto/keyring';
import { processRedaction } from '../../crypto/ring-redaction';
import { installRuntime } from '../../workers/runtime';
import { WORKER_TUNING } from '../../workers/create-worker';
import { workflowSource } from '../../workers/workflow-bundle';
import type { ModelRule, ModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { script } from './scripts';

/** The dev server global-setup started. */
export function testAddress(): string {
  const address = process.env.LOOPWRIGHT_TEST_ADDRESS;
  if (!address)
    throw new Error('LOOPWRIGHT_TEST_ADDRESS is not set: run the tests through jest (test/global-setup.ts)');
  return address;
}

/** The summaries a run's history shows in the Web UI, in order (decoded with the suite's key ring, as the UI's codec server would). */
export async function uiSummaries(client: LoopwrightClient, workflowId: string): Promise<string[]> {
  const ring = keyRingFromEnv(process.env);
  const history = await decodeHistory(
    await client.temporal.workflow.getHandle(workflowId).fetchHistory(),
    ring ? [new EncryptionCodec(ring)] : [],
  );
  return history.events!.map((e) => summaryOf(e as never)).filter((x): x is string => x !== null);
}

/** A task queue of the test's own, so workers of other tests never pick up its runs. */
/** The environment of a client of the suite's server: its address and the suite's key ring (see global-setup), then `extra`. */
export function clientEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS ?? '', ...extra };
}

export function uniqueQueue(name: string): string {
  return `test-${name}-${randomBytes(4).toString('hex')}`;
}

export interface TestStack {
  client: LoopwrightClient;
  worker: Worker;
  taskQueue: string;
  /** Runs the worker while `fn` runs, then shuts it down. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * A worker (real bundle, real activities pointed at `modelUrl`) and a client on one task queue;
 * both encrypt with the ring `env.LOOPWRIGHT_KEYS` names (none by default).
 */
export async function testStack(
  name: string,
  modelUrl: string,
  env: Record<string, string> = {},
  wrap: (activities: Activities) => Activities = (a) => a,
  tools: Tool[] = [],
): Promise<TestStack> {
  installRuntime();
  const taskQueue = uniqueQueue(name);
  const connection = await NativeConnection.connect({ address: testAddress() });
  // The key ring: the test's own LOOPWRIGHT_KEYS, else global-setup's (empty: no encryption).
  const fullEnv = {
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'test-key',
    LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS ?? '',
    ...env,
  };
  const ring = keyRingFromEnv(fullEnv);
  const worker = await Worker.create({
    connection,
    taskQueue,
    // The prebuilt bundle (global-setup names it) and its build id, as a deployed worker has them.
    ...workflowSource(process.env, ring !== undefined),
    // The worker's redaction as a `loopwright worker` with this environment would have it.
    dataConverter: workerDataConverter(ring, processRedaction({ ...process.env, ...fullEnv }, [], ring)),
    activities: wrap(
      createActivities({
        model: createModelClient(fullEnv),
        tools,
        trust: () => trustPathsFromEnv({ ...process.env, ...env }),
      }),
    ),
    ...WORKER_TUNING,
  });
  const client = await LoopwrightClient.connect({
    env: { ...fullEnv, TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: taskQueue },
  });
  return {
    client,
    worker,
    taskQueue,
    run: (fn) => worker.runUntil(fn),
    close: async () => {
      await client.close();
      await connection.close();
    },
  };
}

/**
 * The environment of a `loopwright worker` process for a test: the test dev server, a task queue
 * of its own, the scripted model, and the bundle, transcripts and worktrees of this test run.
 */
export function workerProcessEnv(name: string, modelUrl: string): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: testAddress(),
    LOOPWRIGHT_TASK_QUEUE: uniqueQueue(name),
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: 'test',
    LOOPWRIGHT_WORKFLOW_BUNDLE: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE,
    LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED,
    LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS,
    LOOPWRIGHT_TRANSCRIPTS: process.env.LOOPWRIGHT_TRANSCRIPTS,
    LOOPWRIGHT_WORKTREES: process.env.LOOPWRIGHT_WORKTREES,
    LOOPWRIGHT_ALLOWED_SIGNERS: process.env.LOOPWRIGHT_ALLOWED_SIGNERS,
    LOOPWRIGHT_GRANTS: process.env.LOOPWRIGHT_GRANTS,
    LOOPWRIGHT_SIGNING_KEY: process.env.LOOPWRIGHT_SIGNING_KEY,
  };
}

/** Options of a test stack beyond its name and model (see {@link testStack}). */
export interface StackOptions {
  env?: Record<string, string>;
  wrap?: (activities: Activities) => Activities;
  tools?: Tool[];
}

/**
 * For a test file whose tests each use one scripted model server and one test stack: returns
 * `setup(name, ...rules)` (and `setup.with(name, rules or a whole script, options)`), which starts both, and
 * closes them after each test.
 */
export function scriptedStacks() {
  let model: ModelServer | undefined;
  let stack: TestStack | undefined;
  afterEach(async () => {
    await stack?.close();
    await model?.close();
    stack = model = undefined;
  });
  const withOptions = async (
    name: string,
    rules: ModelRule[] | ModelScript,
    o: StackOptions = {},
  ): Promise<{ model: ModelServer; stack: TestStack }> => {
    model = await startModelServer({ script: Array.isArray(rules) ? script(...rules) : rules, port: 0 });
    stack = await testStack(name, model.url, o.env, o.wrap, o.tools);
    return { model, stack };
  };
  return Object.assign((name: string, ...rules: ModelRule[]) => withOptions(name, rules), { with: withOptions });
}
