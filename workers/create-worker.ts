import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { createAnthropic } from '../activities/model';
import { ConfigError, ServerUnavailableError } from '../common/errors';
import { DEFAULT_PRICES, type ModelPrice } from '../common/pricing';
import { workflowSource } from './workflow-bundle';

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Environment for the model endpoint (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) and prices. */
  env: Record<string, string | undefined>;
}

/** Model prices from LOOPWRIGHT_PRICES (JSON: model id → { input, output, cacheRead, cacheWrite } per million tokens). */
export function readPrices(env: Record<string, string | undefined>): Record<string, ModelPrice> | undefined {
  if (!env.LOOPWRIGHT_PRICES) return undefined;
  try {
    return { ...DEFAULT_PRICES, ...(JSON.parse(env.LOOPWRIGHT_PRICES) as Record<string, ModelPrice>) };
  } catch (err) {
    throw new ConfigError(`LOOPWRIGHT_PRICES is not valid JSON (${(err as Error).message}): give an object of model id to prices`);
  }
}

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
  const activities = createActivities({ anthropic: createAnthropic(opts.env), prices: readPrices(opts.env) });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities,
    ...workflowSource(opts.env),
  });
  return { worker, connection };
}
