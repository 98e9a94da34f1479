import { metricsAddress, readConfig } from '../../common/config';
import { tuningLine, withTuningFlags, withTuningOptions, workerTuning } from '../../workers/tuning';
import { trustNotice, trustPathsFromEnv } from '../../activities/trust';
import { describeConnection, temporalConnectionOptions } from '../../server/temporal-connection';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { modelEndpointNote, untilSignal } from './process';

/** `worker`: polls LOOPWRIGHT_TASK_QUEUE on TEMPORAL_ADDRESS until Ctrl-C or SIGTERM. */
export async function workerCommand(
  opts: { metrics?: string } & Record<string, unknown>,
  given: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  // The worker side loads @temporalio/worker (about 0.3 s), so only the commands that run it load it.
  const { createLoopwrightWorker, sandboxNotice } = await import('../../workers/create-worker');
  const { installRuntime } = await import('../../workers/runtime');
  const env = withTuningFlags(given, opts);
  const tuning = workerTuning(env);
  const config = readConfig(env);
  const metrics = opts.metrics ? metricsAddress(opts.metrics, '--metrics') : config.metrics;
  installRuntime({ metrics, env });
  const { worker, connection, sandbox } = await createLoopwrightWorker({
    address: config.temporalAddress,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    env,
  });
  io.err(
    `worker polling task queue ${config.taskQueue} on ${config.temporalAddress} (namespace ${config.namespace}, ${describeConnection(temporalConnectionOptions(env))}); Ctrl-C stops it`,
  );
  io.err(sandboxNotice(sandbox).line);
  io.err(trustNotice(trustPathsFromEnv(env)));
  io.err(modelEndpointNote(env));
  io.err(tuningLine(tuning));
  if (metrics) io.err(`metrics: http://${metrics}/metrics`);
  const store = env.LOOPWRIGHT_PAYLOAD_STORE?.trim();
  if (store)
    io.err(
      `payloads of 256 bytes or more are kept in ${store} (LOOPWRIGHT_PAYLOAD_STORE), the history holds their SHA-256: every worker and client needs that folder`,
    );
  const running = worker.run();
  await Promise.race([untilSignal(), running]);
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
  await connection.close();
  return 0;
}

/** `worker [--metrics HOST:PORT]` and the worker tuning options. */
export const workerDefinition: CommandDefinition = (program, { action, env, io }) => {
  const worker = program
    .command('worker')
    .description('run a worker on TEMPORAL_ADDRESS / LOOPWRIGHT_TASK_QUEUE')
    .option('--metrics <host:port>', 'serve Prometheus metrics there (default LOOPWRIGHT_METRICS; none when unset)')
    .action(action((opts) => workerCommand(opts, env, io)));
  withTuningOptions(worker);
};
