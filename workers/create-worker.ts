import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { trustPathsFromEnv } from '../activities/trust';
import { createModelClient } from '../activities/providers';
import { ServerUnavailableError } from '../common/errors';
import type { Tool } from '../activities/tools/types';
import { formatSize } from '../activities/sandbox/limits';
import { createSandbox, sandboxConfigFromEnv, type SandboxStatus } from '../activities/sandbox/sandbox';
import { payloadStoreFromEnv } from '../crypto/claim-check';
import { workerDataConverter } from '../crypto/codec';
import { keyRingFromEnv } from '../crypto/keyring';
import { processRedaction } from '../crypto/ring-redaction';
import { isSecured, temporalConnectionOptions } from '../server/temporal-connection';
import { workerTuning } from './tuning';
import { workflowSource } from './workflow-bundle';
import { checkSearchAttributes } from './check-search-attributes';

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
 * workflow and the model/check activities. The caller runs it and shuts it down. The sandbox
 * for agent commands is probed first (a real bubblewrap run) and its status returned, so the
 * caller can say at start what this worker will do with runs that run commands
 * (see {@link sandboxNotice}). A bad LOOPWRIGHT_SANDBOX is a ConfigError before anything connects.
 * With a key ring (LOOPWRIGHT_KEYS) the worker encrypts every payload and failure message it
 * writes (its activities' client, `Context.current().client`, inherits the data converter) and
 * loads the workflow bundle built with the encoding failure converter.
 */
export async function createLoopwrightWorker(
  opts: WorkerOptions,
): Promise<{ worker: Worker; connection: NativeConnection; sandbox: SandboxStatus }> {
  const sandbox = createSandbox(sandboxConfigFromEnv(opts.env));
  // A bad LOOPWRIGHT_KEYS is a ConfigError before anything connects, too.
  const ring = keyRingFromEnv(opts.env);
  // So is a bad tuning value (LOOPWRIGHT_MAX_CACHED_WORKFLOWS, ..., see workers/tuning.ts).
  const tuning = workerTuning(opts.env);
  // And an unknown LOOPWRIGHT_MODEL_PROVIDER (activities/providers).
  const model = createModelClient(opts.env);
  // And a bad LOOPWRIGHT_PAYLOAD_STORE (the claim check, crypto/claim-check.ts).
  const dataConverter = workerDataConverter(ring, processRedaction(opts.env, [], ring), payloadStoreFromEnv(opts.env));
  const status = await sandbox.status();
  // And a bad TLS or API-key setting (TEMPORAL_TLS_*, TEMPORAL_API_KEY, see server/temporal-connection.ts).
  const secure = temporalConnectionOptions(opts.env);
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address: opts.address, ...secure });
  } catch (err) {
    throw new ServerUnavailableError(opts.address, { cause: err, secured: isSecured(secure) });
  }
  await checkSearchAttributes(opts.address, opts.namespace, secure).catch(async (err: unknown) => {
    await connection.close();
    throw err;
  });
  const activities = createActivities({ model, tools: opts.tools, sandbox, trust: () => trustPathsFromEnv(opts.env) });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities,
    ...WORKER_TUNING,
    ...tuning,
    dataConverter,
    ...workflowSource(opts.env, ring !== undefined),
  });
  return { worker, connection, sandbox: status };
}

/**
 * What a worker says at start about its sandbox: one line, loud when commands would run
 * unsandboxed (LOOPWRIGHT_SANDBOX=off) or when runs that run commands will be refused.
 */
export function sandboxNotice(status: SandboxStatus): { line: string; warning: boolean } {
  switch (status.kind) {
    case 'bwrap': {
      const { limits, cgroup, tmpSize } = status.limits;
      const bound = [
        ...(cgroup.kind === 'cgroup'
          ? [`${limits.pids} processes`, `${formatSize(limits.memoryBytes)} memory (cgroup ${cgroup.version})`]
          : []),
        ...(tmpSize ? [`${formatSize(limits.tmpBytes)} /tmp`] : []),
        `${formatSize(limits.fileBytes)} per file`,
        ...(limits.nice > 0 ? [`CPU priority nice ${limits.nice}`] : []),
        ...(limits.diskFreeBytes > 0
          ? [`stopped with less than ${formatSize(limits.diskFreeBytes)} of disk free`]
          : []),
      ];
      const missing =
        cgroup.kind === 'cgroup'
          ? ''
          : `; WARNING: no process or memory limit for commands (${cgroup.reason}): run the worker as root or give it a cgroup it may manage`;
      return {
        line: `sandbox: bubblewrap ${status.version} (${status.path}) runs agent commands and checks; each command's limits: ${bound.join(', ')}${missing}`,
        warning: cgroup.kind !== 'cgroup',
      };
    }
    case 'none':
      return {
        line: "WARNING: LOOPWRIGHT_SANDBOX=off: agent commands and checks run UNSANDBOXED, with this worker's access to files and network (recorded as sandbox: none)",
        warning: true,
      };
    case 'unavailable':
      return {
        line: `WARNING: no sandbox (${status.reason}): runs of loops that run commands will be refused; ${status.fix ?? 'install bubblewrap (apt-get install bubblewrap) or set LOOPWRIGHT_SANDBOX=off to run them unsandboxed'}`,
        warning: true,
      };
  }
}
