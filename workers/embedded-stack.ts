import path from 'node:path';
import { readConfig } from '../common/config';
import { startDevServer, type DevServer } from '../server/dev-server';
import { isPortFree } from '../server/free-port';
import { loopwrightHome } from '../server/paths';
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
  log?: (line: string) => void;
}

/** The metrics address of the embedded stack when none is given. */
export const DEFAULT_METRICS = '127.0.0.1:9464';

/** The embedded default: a Temporal dev server (SQLite, Web UI) and a worker, in one process. */
export interface EmbeddedStack {
  server: DevServer;
  address: string;
  uiUrl?: string;
  /** The Prometheus endpoint, when metrics are served. */
  metricsUrl?: string;
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
  const server = await startDevServer({
    dbFile: opts.dbFile ?? path.join(home, 'dev.db'),
    port: opts.port,
    uiPort: opts.uiPort,
    httpPort: opts.httpPort,
    metricsPort: opts.metricsPort,
    httpApi: opts.httpApi,
    headless: opts.headless,
    namespace: config.namespace,
    lockFile: path.join(home, 'dev.lock'),
    logFile: path.join(home, 'dev-server.log'),
    log: opts.log,
  });
  let worker;
  let metrics: string | undefined;
  try {
    metrics = opts.metrics ?? config.metrics ?? ((await isPortFree(9464)) ? DEFAULT_METRICS : undefined);
    installRuntime({ metrics });
    worker = await createLoopwrightWorker({ address: server.address, namespace: config.namespace, taskQueue: config.taskQueue, env: opts.env });
  } catch (err) {
    await server.stop();
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
    })());
  return { server, address: server.address, uiUrl: server.uiUrl, metricsUrl: metrics ? `http://${metrics}/metrics` : undefined, sandbox: worker.sandbox, namespace: config.namespace, taskQueue: config.taskQueue, done: running, stop };
}
