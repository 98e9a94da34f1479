import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { createAnthropic } from '../activities/model';
import { ServerUnavailableError } from '../common/errors';
import type { Tool } from '../activities/tools/types';
import { checkSearchAttributes } from './check-search-attributes';
import { workflowSource } from './workflow-bundle';

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Environment for the model endpoint (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) and prices. */
  env: Record<string, string | undefined>;
  /** The loops' own tools, registered beside the built-in ones (a custom worker entry passes them). */
  tools?: Tool[];
}

/** Worker settings every Loopwright worker uses (tests too). */
export const WORKER_TUNING = {
  // Cancellation reaches an activity with its next heartbeat: keep that within about a second,
  // so a wall-time stop aborts the model call promptly.
  maxHeartbeatThrottleInterval: '1s',
} as const;

/**
 * Connects to Temporal and creates a worker for the Loopwright task queue with the loop
 * workflow and the model/check activities. The caller runs it and shuts it down.
 */
export async function createLoopwrightWorker(opts: WorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address: opts.address });
  } catch (err) {
    throw new ServerUnavailableError(opts.address, { cause: err });
  }
  await checkSearchAttributes(opts.address, opts.namespace).catch(async (err: unknown) => {
    await connection.close();
    throw err;
  });
  const activities = createActivities({ anthropic: createAnthropic(opts.env), tools: opts.tools });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities,
    ...WORKER_TUNING,
    ...workflowSource(opts.env),
  });
  return { worker, connection };
}
