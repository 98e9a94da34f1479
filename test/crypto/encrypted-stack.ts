import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type Activities } from '../../activities';
import { createModelClient } from '../../activities/providers';
import { trustPathsFromEnv } from '../../activities/trust';
import { LoopwrightClient } from '../../client/loopwright-client';
import { workerDataConverter } from '../../crypto/codec';
import { keyRingFromEnv } from '../../crypto/keyring';
import { processRedaction } from '../../crypto/ring-redaction';
import { WORKER_TUNING } from '../../workers/create-worker';
import { workflowSource } from '../../workers/workflow-bundle';
import { installRuntime } from '../../workers/runtime';

/** A worker and a client on `taskQueue` at `address`, both with the ring `keys` names ('' for none). */
export interface KeyedStack {
  client: LoopwrightClient;
  worker: Worker;
  run<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Like test/helpers/temporal's testStack, but on any server and a task queue the caller picks,
 * so a second worker (after a key rotation) can take over the runs of the first. The worker is
 * built as createLoopwrightWorker builds it: the ring's data converter and the matching bundle.
 */
export async function keyedStack(o: {
  address: string;
  taskQueue: string;
  keys: string;
  modelUrl: string;
  wrap?: (a: Activities) => Activities;
}): Promise<KeyedStack> {
  installRuntime();
  const env = {
    ANTHROPIC_BASE_URL: o.modelUrl,
    ANTHROPIC_API_KEY: 'test-key',
    TEMPORAL_ADDRESS: o.address,
    LOOPWRIGHT_TASK_QUEUE: o.taskQueue,
    LOOPWRIGHT_KEYS: o.keys,
  };
  const ring = keyRingFromEnv(env);
  const connection = await NativeConnection.connect({ address: o.address });
  const wrap = o.wrap ?? ((a) => a);
  const worker = await Worker.create({
    connection,
    taskQueue: o.taskQueue,
    activities: wrap(
      createActivities({ model: createModelClient(env), trust: () => trustPathsFromEnv({ ...process.env, ...env }) }),
    ),
    dataConverter: workerDataConverter(ring, processRedaction(env, [], ring)),
    ...workflowSource(process.env, ring !== undefined),
    ...WORKER_TUNING,
  });
  const client = await LoopwrightClient.connect({ env });
  return {
    client,
    worker,
    run: (fn) => worker.runUntil(fn),
    close: async () => {
      await client.close();
      await connection.close();
    },
  };
}

/** The dev server's SQLite files as they are on disk now: the database, its WAL and shared memory. */
export function rawDatabase(dbFile: string): Buffer {
  return Buffer.concat(
    [dbFile, `${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`]
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f)),
  );
}

/** Waits until `check` holds (the server writes the file a little after it answers), up to `ms`. */
export async function until(check: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
  return true;
}

/**
 * Whether `marker` is anywhere in the dev server's SQLite database: in the raw bytes of its
 * files (database, WAL) and, when the sqlite3 CLI is here, in a full `.dump` of it read through
 * SQLite (blobs as hex, so a value split across overflow pages is found too).
 */
export function databaseHolds(dbFile: string, marker: string): boolean {
  if (rawDatabase(dbFile).includes(Buffer.from(marker))) return true;
  const dump = sqliteDump(dbFile);
  return (
    dump !== undefined &&
    (dump.includes(marker) || dump.toUpperCase().includes(Buffer.from(marker).toString('hex').toUpperCase()))
  );
}

function sqliteDump(dbFile: string): string | undefined {
  try {
    return execFileSync('sqlite3', [dbFile, '.dump'], {
      maxBuffer: 1 << 30,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
}
