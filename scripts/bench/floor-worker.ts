/**
 * The floor's worker process (see floor-workflows.ts): a plain Temporal worker with the SDK's
 * defaults but the same sticky cache as `loopwright worker` (LOOPWRIGHT_MAX_CACHED_WORKFLOWS, read by
 * the same code, default 100), on FLOOR_TASK_QUEUE, calling
 * the model at ANTHROPIC_BASE_URL. Started by the bench beside the Loopwright worker; SIGTERM stops it.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { workerTuning } from '../../workers/tuning';
import { floorActivities } from './floor-activities';

async function main(): Promise<void> {
  const { TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE, ANTHROPIC_BASE_URL } = process.env;
  if (!TEMPORAL_ADDRESS || !FLOOR_TASK_QUEUE || !ANTHROPIC_BASE_URL) {
    throw new Error('floor worker: set TEMPORAL_ADDRESS, FLOOR_TASK_QUEUE and ANTHROPIC_BASE_URL');
  }
  const connection = await NativeConnection.connect({ address: TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    taskQueue: FLOOR_TASK_QUEUE,
    workflowsPath: require.resolve('./floor-workflows'),
    activities: floorActivities(ANTHROPIC_BASE_URL),
    maxCachedWorkflows: workerTuning({ LOOPWRIGHT_MAX_CACHED_WORKFLOWS: process.env.LOOPWRIGHT_MAX_CACHED_WORKFLOWS })
      .maxCachedWorkflows,
  });
  console.error('floor worker polling task queue');
  await worker.run();
  await connection.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
