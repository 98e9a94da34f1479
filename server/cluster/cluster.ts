/**
 * `npm run cluster`: Loopwright's production topology on one machine. A private PostgreSQL,
 * Temporal's databases created and migrated by its schema tool (deploy/temporal-schema.sh), the
 * Temporal services as separate processes rendered from one config template
 * (deploy/temporal/config/loopwright.yaml), the namespace and search attributes
 * (deploy/temporal-setup.sh), and N Loopwright workers. docker-compose.yml uses the same three files.
 */
import { mkdirSync, readFileSync } from 'fs';
import { dirname, join } from 'path';
import { UsageError } from '../../common/errors';
import { must } from '../../common/must';
import { isPortFree, portPicker } from '../free-port';
import { packageRoot } from '../paths';
import { failureReason, runCommand } from '../run-command';
import { findTemporalCli } from '../temporal-binary';
import { isServing } from '../temporal-operator';
import { temporalConnectionOptions } from '../temporal-connection';
import { stopCluster } from './control';
import { DB_PASSWORD, DB_USER, findPostgresBin, postgresUser, queryNumber, startPostgres } from './postgres';
import {
  checkAlive,
  type ClusterProcess,
  type ClusterState,
  isRunning,
  launch,
  readState,
  waitFor,
  writeState,
} from './processes';
import {
  connectionVariables,
  dynamicConfigFile,
  sharedDeployFiles,
  temporalPorts,
  temporalProcess,
} from './temporal-config';
import {
  findAuthorizerServer,
  findSchemaDir,
  findSqlTool,
  findTemporalServer,
  findUiServer,
  usesLoopwrightAuthorizer,
} from './temporal-server-binary';
import { codecEndpoint, startUi } from './web-ui';

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Where the data folder, logs and state go; default `<LOOPWRIGHT_HOME>/cluster`. */
  dir: string;
  /** gRPC port of the first frontend on 127.0.0.1 (default 7233); every other port is a free one. */
  port?: number;
  /** Frontend processes (default 2). */
  frontends?: number;
  /** Loopwright worker processes (default 2). */
  workers?: number;
  /** Serve the Temporal Web UI on 127.0.0.1 at this port (default: no UI). */
  uiPort?: number;
  namespace?: string;
  /** How long closed runs are kept (default 720h). */
  retention?: string;
  /**
   * The environment binaries are found with and workers inherit (default `process.env`). Its
   * client connection settings (TEMPORAL_TLS_*, TEMPORAL_API_KEY: see server/temporal-connection.ts)
   * also reach the CLI that checks the frontends and runs deploy/temporal-setup.sh, and the Web UI.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * More variables for every Temporal service process, read by the config template: TLS
   * (TEMPORAL_TLS_FRONTEND_CERT, TEMPORAL_TLS_REQUIRE_CLIENT_AUTH, ...) or an authorizer, as in
   * docker-compose.yml. Default: none (plain TCP on 127.0.0.1).
   */
  serverEnv?: Record<string, string>;
  log?: (line: string) => void;
}

function checkOptions(o: ClusterOptions): void {
  const whole = (name: string, v: number | undefined, min: number, max: number) => {
    if (v !== undefined && (!Number.isInteger(v) || v < min || v > max))
      throw new UsageError(`${name} must be a whole number from ${min} to ${max}, not ${v}`);
  };
  whole('--port', o.port, 1, 65535);
  whole('--frontends', o.frontends, 1, 4);
  whole('--workers', o.workers, 0, 16);
  whole('--ui-port', o.uiPort, 1, 65535);
}

/**
 * Starts the whole cluster and returns its state (also in `<dir>/state.json`). Refuses (exit 2)
 * when a cluster already runs from `dir` or the port is taken; on any failure stops whatever it
 * had started. Binaries are found or built first (see temporal-server-binary.ts), so a missing
 * Go or PostgreSQL is reported before anything starts.
 */
export async function startCluster(o: ClusterOptions): Promise<ClusterState> {
  checkOptions(o);
  const env = o.env ?? process.env;
  const log = o.log ?? (() => undefined);
  const port = o.port ?? 7233;
  const namespace = o.namespace ?? 'default';
  const previous = readState(o.dir);
  if (previous?.processes.some(isRunning))
    throw new UsageError(
      `a cluster is already running from ${o.dir} (frontend ${previous.addresses[0]}): stop it first with \`npm run cluster -- stop\``,
    );
  if (!(await isPortFree(port))) throw new UsageError(`port ${port} is in use: give another with --port`);
  if (o.uiPort !== undefined && !(await isPortFree(o.uiPort)))
    throw new UsageError(`port ${o.uiPort} is in use: give another with --ui-port`);
  // Bad TLS or API-key settings stop the start before anything runs (a ConfigError, exit 2).
  temporalConnectionOptions(env);
  const clientVars = connectionVariables(env);
  const pgBin = findPostgresBin(env);
  const runAs = await postgresUser(env);
  const [server, sqlTool, cli] = [
    // TEMPORAL_AUTH_AUTHORIZER=loopwright needs the server built from deploy/temporal-server/; the
    // stock one knows only `default`.
    usesLoopwrightAuthorizer(o.serverEnv)
      ? await findAuthorizerServer({ env, log })
      : await findTemporalServer({ env, log }),
    await findSqlTool({ env, log }),
    await findTemporalCli({ env, log }),
  ];
  const schemaDir = await findSchemaDir(env);
  const ui = o.uiPort === undefined ? undefined : await findUiServer({ env, log });

  mkdirSync(join(o.dir, 'logs'), { recursive: true });
  // Every port this start hands out is another: the frontend's and the Web UI's are not bound yet.
  const nextPort = portPicker([port, o.uiPort]);
  const state: ClusterState = {
    addresses: [],
    namespace,
    pgPort: await nextPort(),
    startedAt: new Date().toISOString(),
    processes: [],
  };
  const add = (p: ClusterProcess) => {
    state.processes.push(launch(p));
    writeState(o.dir, state);
    return p;
  };
  try {
    const dbEnv = {
      TEMPORAL_DB_HOST: '127.0.0.1',
      TEMPORAL_DB_PORT: String(state.pgPort),
      TEMPORAL_DB_USER: DB_USER,
      TEMPORAL_DB_PASSWORD: DB_PASSWORD,
    };
    await startPostgres(o.dir, pgBin, runAs, state.pgPort, add, log);
    log('creating and migrating the Temporal databases (deploy/temporal-schema.sh)');
    await runStep('deploy/temporal-schema.sh', sharedDeployFiles().schemaScript, {
      PATH: env.PATH ?? '',
      TEMPORAL_SQL_TOOL: sqlTool,
      TEMPORAL_SCHEMA_DIR: schemaDir,
      ...dbEnv,
    });

    const { shared, frontendPorts } = await temporalPorts(port, o.frontends ?? 2, nextPort);
    const firstPorts = must(frontendPorts[0], '--frontends is at least 1');
    // With an authorizer, Temporal's internal worker (and the frontend's calls to itself) go through
    // an internal frontend, which the authorizer skips; without one they are refused ("Request unauthorized").
    const internalFrontend = Boolean(o.serverEnv?.TEMPORAL_AUTH_AUTHORIZER?.trim());
    if (internalFrontend) shared.USE_INTERNAL_FRONTEND = 'true';
    const base = {
      PATH: env.PATH ?? '',
      HOME: env.HOME ?? '',
      TEMPORAL_DYNAMIC_CONFIG: dynamicConfigFile(),
      ...o.serverEnv,
      ...dbEnv,
      ...shared,
    };
    const services: Array<[string, string, Record<string, string>]> = [
      ['history', 'history', firstPorts],
      ['matching', 'matching', firstPorts],
      ...frontendPorts.map((ports, i): [string, string, Record<string, string>] => [
        i === 0 ? 'frontend' : `frontend-${i + 1}`,
        'frontend',
        ports,
      ]),
      ...(internalFrontend
        ? [['internal-frontend', 'internal-frontend', firstPorts] as [string, string, Record<string, string>]]
        : []),
      ['internal-worker', 'worker', firstPorts],
    ];
    for (const [name, service, ports] of services) {
      const metrics = String(await nextPort());
      const p = add(
        temporalProcess(o.dir, server, name, service, { ...base, ...ports, TEMPORAL_METRICS_PORT: metrics }),
      );
      // The first process writes the cluster's metadata into a fresh database; the others, started
      // at the same moment, would race it and exit ("failed to initialize current cluster metadata").
      if (name === 'history') {
        await waitFor(
          'the cluster metadata',
          async () => {
            checkAlive([p], log);
            writeState(o.dir, state);
            return (
              ((await queryNumber(
                pgBin,
                state.pgPort,
                DB_PASSWORD,
                'temporal',
                'select count(*) from cluster_metadata_info',
              )) ?? 0) > 0
            );
          },
          p.logFile,
        );
      }
    }
    state.addresses = frontendPorts.map((p) => `127.0.0.1:${p.TEMPORAL_FRONTEND_PORT}`);
    writeState(o.dir, state);
    for (const address of state.addresses) {
      log(`waiting for the frontend at ${address}`);
      await waitFor(
        `the frontend at ${address}`,
        () => (
          checkAlive(
            state.processes.filter((p) => p.command === server),
            log,
          ),
          writeState(o.dir, state),
          isServing({ cli, address, namespace, env: { PATH: env.PATH, HOME: env.HOME, ...clientVars } })
        ),
        join(o.dir, 'logs', 'frontend.log'),
      );
    }
    log('namespace, retention and search attributes (deploy/temporal-setup.sh)');
    await runStep('deploy/temporal-setup.sh', sharedDeployFiles().setupScript, {
      PATH: `${dirname(cli)}:${env.PATH ?? ''}`,
      HOME: env.HOME ?? '',
      TEMPORAL_ADDRESS: must(state.addresses[0], 'the cluster has a frontend'),
      // Each frontend must use the search attributes before a worker or client starts a run.
      TEMPORAL_SETUP_FRONTENDS: state.addresses.join(' '),
      TEMPORAL_NAMESPACE: namespace,
      LOOPWRIGHT_RETENTION: o.retention ?? '720h',
      TEMPORAL_SETUP_RETRY_DELAY: '1',
      ...clientVars,
    });
    if (ui && o.uiPort !== undefined) {
      const uiUrl = `http://127.0.0.1:${o.uiPort}`;
      state.codecUrl = await codecEndpoint(o.dir, uiUrl, env, add, log, nextPort);
      writeState(o.dir, state);
      state.uiUrl = await startUi(o.dir, ui, o.uiPort, state, add, clientVars);
    }
    writeState(o.dir, state);
    for (let i = 1; i <= (o.workers ?? 2); i++) await startWorker(o.dir, state, add, i, env);
    return state;
  } catch (err) {
    await stopCluster(o.dir);
    throw err;
  }
}

async function runStep(title: string, script: string, env: Record<string, string>): Promise<void> {
  const result = await runCommand('sh', [script], { env, timeoutMs: 10 * 60_000 });
  if (result.code !== 0 || result.error) throw new Error(`${title} failed: ${failureReason(result)}`);
}

async function startWorker(
  dir: string,
  state: ClusterState,
  add: (p: ClusterProcess) => ClusterProcess,
  i: number,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const p = add({
    name: `worker-${i}`,
    command: process.execPath,
    args: [join(packageRoot(), 'dist', 'workers', 'main.js')],
    env: {
      ...(env as Record<string, string>),
      TEMPORAL_ADDRESS: must(state.addresses[(i - 1) % state.addresses.length], 'the cluster has a frontend'),
      TEMPORAL_NAMESPACE: state.namespace,
    },
    logFile: join(dir, 'logs', `worker-${i}.log`),
    stopSignal: 'SIGTERM',
  });
  await waitFor(
    `worker-${i} to poll`,
    async () => {
      if (!isRunning(p)) throw new Error(`worker-${i} exited at start: see ${p.logFile}`);
      return readFileSync(p.logFile, 'utf8').includes('worker polling task queue');
    },
    p.logFile,
    60_000,
  );
}
