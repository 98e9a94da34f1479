/**
 * `npm run cluster`: Loopwright's production topology on one machine. A private PostgreSQL,
 * Temporal's databases created and migrated by its schema tool (deploy/temporal-schema.sh), the
 * Temporal services as separate processes rendered from one config template
 * (deploy/temporal/config/loopwright.yaml), the namespace and search attributes
 * (deploy/temporal-setup.sh), and N Loopwright workers. docker-compose.yml uses the same three files.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'fs';
import { dirname, join, resolve } from 'path';
import { UsageError } from '../../common/errors';
import { must } from '../../common/must';
import { isPortFree, portPicker } from '../free-port';
import { loopwrightHome, packageRoot } from '../paths';
import { failureReason, runCommand } from '../run-command';
import { findTemporalCli } from '../temporal-binary';
import { isServing } from '../temporal-operator';
import { TEMPORAL_CONNECTION_VARIABLES, temporalConnectionOptions } from '../temporal-connection';
import {
  DB_USER,
  findPostgresBin,
  initDataDir,
  isPostgresReady,
  postgresArgs,
  postgresUser,
  queryNumber,
  type RunAs,
} from './postgres';
import {
  type ClusterProcess,
  type ClusterState,
  isRunning,
  launch,
  readState,
  removeState,
  stopProcess,
  writeState,
} from './processes';
import { findSchemaDir, findSqlTool, findTemporalServer, findUiServer } from './temporal-server-binary';

/** The client connection variables set in `env` (TEMPORAL_TLS_*, TEMPORAL_API_KEY), for the CLI, setup and UI. */
function connectionVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of TEMPORAL_CONNECTION_VARIABLES) if (env[name]?.trim()) vars[name] = env[name]!.trim();
  return vars;
}

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

const DB_PASSWORD = 'temporal';
const DEPLOY = () => join(packageRoot(), 'deploy');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The dynamic config file every Temporal process reads: the one docker-compose.yml mounts too. */
export function dynamicConfigFile(): string {
  return join(DEPLOY(), 'temporal', 'dynamicconfig', 'development-sql.yaml');
}

/**
 * The files the cluster and docker-compose.yml share: the server's config folder (the template
 * config/loopwright.yaml and the dynamic config), the schema script and the setup script.
 * test/docker-compose.test.ts fails when compose mounts others.
 */
export function sharedDeployFiles(): {
  configRoot: string;
  template: string;
  schemaScript: string;
  setupScript: string;
} {
  return {
    configRoot: join(DEPLOY(), 'temporal'),
    template: join(DEPLOY(), 'temporal', 'config', 'loopwright.yaml'),
    schemaScript: join(DEPLOY(), 'temporal-schema.sh'),
    setupScript: join(DEPLOY(), 'temporal-setup.sh'),
  };
}

/**
 * The template's TLS and authorizer variables (deploy/temporal/config/loopwright.yaml), which
 * `npm run cluster` passes from its environment to every Temporal process. With an authorizer the
 * cluster also starts an internal-frontend process (see startCluster).
 */
export const SERVER_SECURITY_VARIABLES = [
  'TEMPORAL_TLS_REFRESH_INTERVAL',
  'TEMPORAL_TLS_REQUIRE_CLIENT_AUTH',
  'TEMPORAL_TLS_SERVER_CERT',
  'TEMPORAL_TLS_SERVER_KEY',
  'TEMPORAL_TLS_SERVER_CA_CERT',
  'TEMPORAL_TLS_INTERNODE_SERVER_NAME',
  'TEMPORAL_TLS_INTERNODE_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_TLS_FRONTEND_CERT',
  'TEMPORAL_TLS_FRONTEND_KEY',
  'TEMPORAL_TLS_CLIENT1_CA_CERT',
  'TEMPORAL_TLS_CLIENT2_CA_CERT',
  'TEMPORAL_TLS_FRONTEND_SERVER_NAME',
  'TEMPORAL_TLS_FRONTEND_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_AUTH_AUTHORIZER',
  'TEMPORAL_AUTH_CLAIM_MAPPER',
  'TEMPORAL_JWT_KEY_SOURCE1',
  'TEMPORAL_JWT_KEY_SOURCE2',
  'TEMPORAL_JWT_KEY_REFRESH',
  'TEMPORAL_JWT_PERMISSIONS_CLAIM',
] as const;

/** The {@link SERVER_SECURITY_VARIABLES} set in `env`. */
export function serverSecurityEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of SERVER_SECURITY_VARIABLES) if (env[name]?.trim()) vars[name] = env[name]!.trim();
  return vars;
}

/**
 * The Temporal server's command line for `services` with the config folder at `root`: one service
 * per cluster process; all four in compose's one (deploy/temporal-start.sh builds the same line).
 */
export function temporalServerArgs(root: string, services: string[]): string[] {
  return [
    '--root',
    root,
    '--config',
    'config',
    '--env',
    'loopwright',
    '--allow-no-auth',
    'start',
    ...services.flatMap((s) => ['--service', s]),
  ];
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  logFile: string | undefined,
  timeoutMs = 120_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${logFile ? `: see ${logFile}` : ''}`);
    await sleep(500);
  }
}

/**
 * Free ports from `from` upward, below 32768: Temporal stores membership ports in a PostgreSQL
 * smallint (cluster_membership.rpc_port), so an ephemeral port (32768 and up on Linux) makes the
 * service die at start with "value out of range for type smallint".
 */
async function lowFreePorts(count: number, from = 6933): Promise<number[]> {
  const ports: number[] = [];
  for (let port = from; ports.length < count && port < 32768; port++) if (await isPortFree(port)) ports.push(port);
  if (ports.length < count)
    throw new Error(`no ${count} free ports between ${from} and 32767 for Temporal's membership`);
  return ports;
}

/** The ports every Temporal process is told about (one config for all), from the first frontend's port and free ones. */
async function temporalPorts(
  port: number,
  frontends: number,
  freePort: () => Promise<number>,
): Promise<{ shared: Record<string, string>; frontendPorts: Array<Record<string, string>> }> {
  const membership = await lowFreePorts(4 + frontends);
  const shared: Record<string, string> = {
    TEMPORAL_HISTORY_PORT: String(await freePort()),
    TEMPORAL_HISTORY_MEMBERSHIP_PORT: String(membership[0]),
    TEMPORAL_MATCHING_PORT: String(await freePort()),
    TEMPORAL_MATCHING_MEMBERSHIP_PORT: String(membership[1]),
    TEMPORAL_WORKER_PORT: String(await freePort()),
    TEMPORAL_WORKER_MEMBERSHIP_PORT: String(membership[2]),
    // Used only with an authorizer (USE_INTERNAL_FRONTEND): the frontend Temporal's own worker calls.
    TEMPORAL_INTERNAL_FRONTEND_PORT: String(await freePort()),
    TEMPORAL_INTERNAL_FRONTEND_MEMBERSHIP_PORT: String(membership[3 + frontends]),
    TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT: String(await freePort()),
  };
  const frontendPorts: Array<Record<string, string>> = [];
  for (let i = 0; i < frontends; i++) {
    frontendPorts.push({
      TEMPORAL_FRONTEND_PORT: String(i === 0 ? port : await freePort()),
      TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(membership[3 + i]),
      TEMPORAL_FRONTEND_HTTP_PORT: String(await freePort()),
    });
  }
  return { shared, frontendPorts };
}

/** The last lines of a process's log on one line, for an error that outlives the log's folder. */
function logTail(logFile: string, lines = 3): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-lines).join(' | ') || '(its log is empty)';
  } catch {
    return '(no log)';
  }
}

/** Why a Temporal process stopped: the error of the last fatal line of its log. */
function exitReason(p: ClusterProcess): string {
  const fatal = readFileSync(p.logFile, 'utf8')
    .split('\n')
    .reverse()
    .find((line) => /"level":"fatal"|Unable to/.test(line));
  return fatal ? (/"error":"([^"]*)"/.exec(fatal)?.[1] ?? fatal.slice(0, 300)) : 'no fatal line';
}

const startTries = new Map<string, number>();

/**
 * Starts again a Temporal process that exited while the cluster starts (once more, at most twice:
 * a port another program took between our check and its bind, say), and throws with the reason
 * from its log when it keeps exiting.
 */
function checkAlive(processes: ClusterProcess[], log: (line: string) => void): void {
  for (const p of processes) {
    if (isRunning(p)) continue;
    const reason = exitReason(p);
    const tries = (startTries.get(p.logFile) ?? 0) + 1;
    if (tries > 2) throw new Error(`the Temporal ${p.name} service exited at start (${reason}): see ${p.logFile}`);
    startTries.set(p.logFile, tries);
    log(`the Temporal ${p.name} service exited at start (${reason.slice(0, 200)}); starting it again`);
    launch(p);
  }
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
    await findTemporalServer({ env, log }),
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

function temporalProcess(
  dir: string,
  server: string,
  name: string,
  service: string,
  env: Record<string, string>,
): ClusterProcess {
  return {
    name,
    command: server,
    args: temporalServerArgs(sharedDeployFiles().configRoot, [service]),
    env,
    logFile: join(dir, 'logs', `${name}.log`),
    stopSignal: 'SIGTERM',
  };
}

async function startPostgres(
  dir: string,
  bin: string,
  runAs: RunAs | undefined,
  port: number,
  add: (p: ClusterProcess) => ClusterProcess,
  log: (line: string) => void,
): Promise<void> {
  const dataDir = join(dir, 'pgdata');
  // The unprivileged user must get through the cluster folder to its data folder (nothing else is readable).
  if (runAs) {
    chmodSync(dir, 0o711);
    for (let up = dirname(resolve(dir)); up !== dirname(up); up = dirname(up)) {
      if ((statSync(up).mode & 0o001) === 0)
        throw new UsageError(
          `PostgreSQL runs as ${runAs.name}, who cannot get through ${up} to ${dir}: choose another --dir, or let others through it (chmod o+x)`,
        );
    }
  }
  await initDataDir(bin, dataDir, DB_PASSWORD, runAs, log);
  log(`PostgreSQL on 127.0.0.1:${port}${runAs ? ` as ${runAs.name}` : ''}`);
  const p = add({
    name: 'postgres',
    command: join(bin, 'postgres'),
    args: postgresArgs(dataDir, port),
    env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' },
    uid: runAs?.uid,
    gid: runAs?.gid,
    logFile: join(dir, 'logs', 'postgres.log'),
    stopSignal: 'SIGINT',
  });
  await waitFor(
    'PostgreSQL',
    async () => {
      if (!isRunning(p)) throw new Error(`PostgreSQL exited at start: see ${p.logFile}`);
      return isPostgresReady(bin, port);
    },
    p.logFile,
    60_000,
  );
}

/** The Web UI server on 127.0.0.1:`port` for the first frontend, from a config file written into `<dir>/ui/`. */
async function startUi(
  dir: string,
  server: string,
  port: number,
  state: ClusterState,
  add: (p: ClusterProcess) => ClusterProcess,
  clientVars: Record<string, string>,
): Promise<string> {
  const url = `http://127.0.0.1:${port}`;
  mkdirSync(join(dir, 'ui'), { recursive: true });
  const config = [
    `temporalGrpcAddress: ${state.addresses[0]}`,
    'host: 127.0.0.1',
    `port: ${port}`,
    'enableUi: true',
    `defaultNamespace: ${state.namespace}`,
    // Only the UI's own origin (see docker-compose.yml's temporal-ui), and no calls out of the machine.
    'cors:',
    '  cookieInsecure: true',
    '  allowOrigins:',
    `    - ${url}`,
    'disableNewsFetch: true',
    'hideLogs: true',
    ...uiTls(clientVars),
    // The browser calls the codec server to show encrypted payloads (not the UI server).
    ...(state.codecUrl ? ['codec:', `  endpoint: ${state.codecUrl}`] : []),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'ui', 'loopwright.yaml'), config);
  const p = add({
    name: 'ui',
    command: server,
    args: ['--root', dir, '--config', 'ui', '--env', 'loopwright', 'start'],
    env: { PATH: process.env.PATH ?? '' },
    logFile: join(dir, 'logs', 'ui.log'),
    stopSignal: 'SIGTERM',
  });
  await waitFor(
    `the Web UI at ${url}`,
    async () => {
      if (!isRunning(p)) throw new Error(`the Web UI server exited at start: ${logTail(p.logFile)} (see ${p.logFile})`);
      return fetch(url).then(
        (res) => res.ok,
        () => false,
      );
    },
    p.logFile,
    60_000,
  );
  return url;
}

/** Where the key ring is: LOOPWRIGHT_KEYS, else `<LOOPWRIGHT_HOME>/keys` when it exists (as crypto/keyring.ts reads it). */
function keyRingLocation(env: NodeJS.ProcessEnv): string | undefined {
  if (env.LOOPWRIGHT_KEYS !== undefined) return env.LOOPWRIGHT_KEYS.trim() || undefined;
  const file = join(loopwrightHome(env), 'keys');
  return existsSync(file) ? file : undefined;
}

/**
 * The codec server the Web UI decodes payloads through: TEMPORAL_CODEC_ENDPOINT when set (one
 * you run, with a token, say), else with a key ring a `loopwright codec-server` process of the
 * cluster's own on 127.0.0.1 that lets in the UI's origin only, else none (payloads are stored in clear).
 */
async function codecEndpoint(
  dir: string,
  uiUrl: string,
  env: NodeJS.ProcessEnv,
  add: (p: ClusterProcess) => ClusterProcess,
  log: (line: string) => void,
  freePort: () => Promise<number>,
): Promise<string | undefined> {
  const given = env.TEMPORAL_CODEC_ENDPOINT?.trim();
  if (given) {
    if (!/^https?:\/\/[^\s]+$/.test(given))
      throw new UsageError(
        `TEMPORAL_CODEC_ENDPOINT "${given.slice(0, 60)}" is not an http(s) URL: give the codec server's URL or unset it`,
      );
    return given;
  }
  if (!keyRingLocation(env)) {
    log('no key ring (LOOPWRIGHT_KEYS): no codec server for the Web UI (payloads are stored in clear)');
    return undefined;
  }
  const port = await freePort();
  const p = add({
    name: 'codec',
    command: process.execPath,
    args: [
      join(packageRoot(), 'dist', 'client', 'cli.js'),
      'codec-server',
      '--port',
      String(port),
      '--allow-origin',
      uiUrl,
    ],
    env: env as Record<string, string>,
    logFile: join(dir, 'logs', 'codec.log'),
    stopSignal: 'SIGTERM',
  });
  await waitFor(
    'the codec server',
    async () => {
      if (!isRunning(p)) throw new Error(`the codec server exited at start: see ${p.logFile}`);
      return readFileSync(p.logFile, 'utf8').includes('codec server listening');
    },
    p.logFile,
    60_000,
  );
  log(`codec server for the Web UI on http://127.0.0.1:${port}`);
  return `http://127.0.0.1:${port}`;
}

/** The `tls:` section of the UI server's config for an mTLS frontend: the same files the CLI and workers use. */
function uiTls(vars: Record<string, string>): string[] {
  const files: Array<[string, string | undefined]> = [
    ['caFile', vars.TEMPORAL_TLS_SERVER_CA_CERT_PATH],
    ['certFile', vars.TEMPORAL_TLS_CLIENT_CERT_PATH],
    ['keyFile', vars.TEMPORAL_TLS_CLIENT_KEY_PATH],
    ['serverName', vars.TEMPORAL_TLS_SERVER_NAME],
  ];
  const set = files.filter(([, v]) => v);
  if (set.length === 0) return [];
  return ['tls:', ...set.map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`), '  enableHostVerification: true'];
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

/** Stops every process of the cluster in `dir` (workers first, PostgreSQL last) by its recorded pid; returns their names. */
export async function stopCluster(dir: string): Promise<string[]> {
  const state = readState(dir);
  if (!state) return [];
  const running = state.processes.filter(isRunning);
  const order = (p: ClusterProcess) =>
    p.name.startsWith('worker-') || p.name === 'ui' || p.name === 'codec' ? 0 : p.name === 'postgres' ? 2 : 1;
  for (const rank of [0, 1, 2]) await Promise.all(running.filter((p) => order(p) === rank).map((p) => stopProcess(p)));
  const left = state.processes.filter(isRunning);
  if (left.length > 0)
    throw new Error(`still running after stop: ${left.map((p) => `${p.name} (pid ${String(p.pid)})`).join(', ')}`);
  removeState(dir);
  return running.map((p) => p.name);
}

function processNamed(dir: string, name: string): { state: ClusterState; p: ClusterProcess } {
  const state = readState(dir);
  const p = state?.processes.find((x) => x.name === name);
  if (!state || !p) throw new UsageError(`no process ${name} in the cluster at ${dir}`);
  return { state, p };
}

/** Kills one process of the cluster (default SIGKILL, as a crash would) and waits until it is gone. */
export async function killService(dir: string, name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  await stopProcess(processNamed(dir, name).p, signal);
}

/** Starts one process of the cluster again exactly as it was started (same ports, environment and log). */
export async function restartService(dir: string, name: string): Promise<void> {
  await restartServices(dir, [name]);
}

/**
 * Starts processes of the cluster again, all at once, exactly as they were started, and watches
 * them as a supervisor (systemd, Kubernetes, compose's `restart:`) would: one that exits within
 * `settleMs` is started again (5 times at most, PostgreSQL 30). PostgreSQL exits at start while the backends of a
 * postmaster killed with SIGKILL still hold its shared memory (they leave once they notice it is
 * gone), and Temporal services started together can race on the cluster metadata (see
 * {@link checkAlive}). PostgreSQL is waited for until it accepts connections.
 */
export async function restartServices(dir: string, names: string[], settleMs = 5_000): Promise<void> {
  const state = readState(dir);
  const chosen = names.map((name) => {
    const p = state?.processes.find((x) => x.name === name);
    if (!state || !p) throw new UsageError(`no process ${name} in the cluster at ${dir}`);
    if (isRunning(p)) throw new UsageError(`${name} is still running (pid ${String(p.pid)})`);
    return p;
  });
  for (const p of chosen) launch(p);
  writeState(dir, state!);
  const tries = new Map<ClusterProcess, number>();
  const relaunchExited = () => {
    for (const p of chosen) {
      if (isRunning(p)) continue;
      const n = (tries.get(p) ?? 0) + 1;
      // PostgreSQL may take a few seconds to be startable again (the old backends leaving).
      if (n > (p.name === 'postgres' ? 30 : 5))
        throw new Error(`${p.name} keeps exiting after a restart: see ${p.logFile}`);
      tries.set(p, n);
      launch(p);
    }
    writeState(dir, state!);
  };
  const postgres = chosen.find((p) => p.name === 'postgres');
  if (postgres) {
    await waitFor(
      'PostgreSQL',
      async () => {
        relaunchExited();
        return isPostgresReady(dirname(postgres.command), state!.pgPort);
      },
      postgres.logFile,
      60_000,
    );
  }
  for (const end = Date.now() + settleMs; Date.now() < end; await sleep(500)) relaunchExited();
  relaunchExited();
}

/** True when `dir` holds a cluster state (running or not). */
export function hasCluster(dir: string): boolean {
  return existsSync(join(dir, 'state.json'));
}
