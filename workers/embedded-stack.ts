import path from 'node:path';
import { readConfig } from '../common/config';
import { UsageError } from '../common/errors';
import { payloadStoreFromEnv } from '../crypto/claim-check';
import { keyRingFromEnv } from '../crypto/keyring';
import { startCodecServer, type CodecServer } from '../crypto/codec-server';
import { startDevServer, type DevServer } from '../server/dev-server';
import { isPortFree } from '../server/free-port';
import { loopwrightHome } from '../server/paths';
import { withoutConnectionSettings } from '../server/temporal-connection';
import type { SandboxStatus } from '../activities/sandbox/sandbox';
import { createLoopwrightWorker } from './create-worker';
import { installRuntime } from './runtime';

export interface StackOptions {
  env: Record<string, string | undefined>;
  port?: number;
  uiPort?: number;
  /** The dev server's HTTP API port (default: a free port). */
  httpPort?: number;
  /** The dev server's own /metrics port (default: a free port). */
  metricsPort?: number;
  /** Let the dev server's HTTP API answer requests (default: it refuses every request). */
  httpApi?: boolean;
  dbFile?: string;
  headless?: boolean;
  /** Where to serve Prometheus metrics (`host:port`); default 127.0.0.1:9464 when that port is free. */
  metrics?: string;
  /** Port of the codec server started when LOOPWRIGHT_KEYS is set (default: a free port). */
  codecPort?: number;
  log?: (line: string) => void;
}

/** The metrics address of the embedded stack when none is given. */
export const DEFAULT_METRICS = '127.0.0.1:9464';

/**
 * The embedded default: a Temporal dev server (SQLite, Web UI) and a worker, in one process; with a
 * key ring (LOOPWRIGHT_KEYS), also a codec server on 127.0.0.1 that the Web UI decodes payloads
 * through (`--ui-codec-endpoint`), open to that UI's origin only.
 */
export interface EmbeddedStack {
  server: DevServer;
  address: string;
  uiUrl?: string;
  /** The Prometheus endpoint, when metrics are served. */
  metricsUrl?: string;
  /** The codec server the Web UI decodes payloads through (on 127.0.0.1), when LOOPWRIGHT_KEYS is set. */
  codec?: CodecServer;
  /** What the worker's sandbox for agent commands can do (see sandboxNotice). */
  sandbox: SandboxStatus;
  namespace: string;
  taskQueue: string;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  /** Stops the worker, then the dev server. Safe to call more than once. */
  stop(): Promise<void>;
}

export async function startEmbeddedStack(opts: StackOptions): Promise<EmbeddedStack> {
  const home = loopwrightHome(opts.env);
  const config = readConfig(opts.env);
  const ring = keyRingFromEnv(opts.env);
  const store = payloadStoreFromEnv(opts.env);
  if (!ring && !store && opts.codecPort !== undefined)
    throw new UsageError(
      '--codec-port needs a key ring to decode with and LOOPWRIGHT_KEYS is not set: set it, or leave --codec-port out',
    );
  const uiPort = opts.uiPort ?? (opts.port ?? 7233) + 1000;
  const codec =
    ring || store
      ? await startCodecServer({
          ring,
          store,
          port: opts.codecPort ?? 0,
          allowOrigins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
        })
      : undefined;
  const server = await startDevServer({
    dbFile: opts.dbFile ?? path.join(home, 'dev.db'),
    port: opts.port,
    uiPort: opts.uiPort,
    httpPort: opts.httpPort,
    metricsPort: opts.metricsPort,
    httpApi: opts.httpApi,
    headless: opts.headless,
    codecEndpoint: codec?.url,
    namespace: config.namespace,
    lockFile: path.join(home, 'dev.lock'),
    logFile: path.join(home, 'dev-server.log'),
    log: opts.log,
  }).catch(async (err: unknown) => {
    await codec?.close();
    throw err;
  });
  let worker;
  let metrics: string | undefined;
  try {
    metrics = opts.metrics ?? config.metrics ?? ((await isPortFree(9464)) ? DEFAULT_METRICS : undefined);
    installRuntime({ metrics, env: opts.env });
    worker = await createLoopwrightWorker({
      address: server.address,
      namespace: config.namespace,
      taskQueue: config.taskQueue,
      // Its own dev server on 127.0.0.1 speaks plain TCP, whatever TLS or API key the environment holds.
      env: withoutConnectionSettings(opts.env),
    });
  } catch (err) {
    await server.stop();
    await codec?.close();
    throw err;
  }
  const running = worker.worker.run();
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (worker.worker.getState() === 'RUNNING') worker.worker.shutdown();
      await running.catch(() => undefined);
      await worker.connection.close();
      await server.stop();
      await codec?.close();
    })());
  return {
    server,
    address: server.address,
    uiUrl: server.uiUrl,
    metricsUrl: metrics ? `http://${metrics}/metrics` : undefined,
    codec,
    sandbox: worker.sandbox,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    done: running,
    stop,
  };
}
