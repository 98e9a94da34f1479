import { type ChildProcess, spawn } from 'child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'fs';
import { basename, dirname, extname, join, resolve } from 'path';
import { parseDuration } from '../common/duration';
import { UsageError } from '../common/errors';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { DevServerStartError, PortInUseError } from './dev-server-errors';
import { acquireDevServerLock, type DevServerLock, releaseDevServerLock, updateDevServerLock } from './dev-server-lock';
import { freePort, isPortFree } from './free-port';
import { findTemporalCli } from './temporal-binary';
import { ensureSearchAttributes, isServing, type OperatorTarget, setRetention } from './temporal-operator';

export { DevServerRunningError, DevServerStartError, PortInUseError } from './dev-server-errors';
export { freePort } from './free-port';

/** Options for {@link startDevServer}. */
export interface DevServerOptions {
  /** Path of the Temporal CLI; default {@link findTemporalCli} (which may install it). */
  cli?: string;
  /** SQLite file that keeps runs across restarts; its folder is created. */
  dbFile: string;
  /** gRPC port on 127.0.0.1 (default 7233). */
  port?: number;
  /** Web UI port on 127.0.0.1 (default port + 1000, so 8233). */
  uiPort?: number;
  /** Port of the server's HTTP API on 127.0.0.1 (default, or 0: a free port Loopwright picks). */
  httpPort?: number;
  /** Port of the server's Prometheus `/metrics` on 127.0.0.1 (default, or 0: a free port Loopwright picks). */
  metricsPort?: number;
  /**
   * Serve the HTTP API (default false). The CLI always opens its port; off, the server refuses
   * every request there (403 "Host not allowed"), because any web page the user visits could
   * POST to it (text/plain needs no CORS preflight) and start or signal workflows. On, it answers
   * requests addressed to `127.0.0.1:PORT` or `localhost:PORT` only (no DNS rebinding), which
   * such a page can still reach.
   */
  httpApi?: boolean;
  /** No Web UI. */
  headless?: boolean;
  /** SQLite's `synchronous` setting (default `NORMAL`; see README "Durability of the dev server's file"). */
  sqliteSync?: SqliteSync;
  /** A codec server the Web UI decodes payloads through (`--ui-codec-endpoint`), e.g. `http://127.0.0.1:8234`. */
  codecEndpoint?: string;
  /** Namespace to create and configure (default `default`). */
  namespace?: string;
  /** How long closed runs are kept, at least 30 days (default `720h`). */
  retention?: string;
  /** JSON lock `{pid, address, uiUrl, startedAt}` so only one server runs on it. */
  lockFile?: string;
  /** Where the server's own output goes (default `<db folder>/<db name>.log`). */
  logFile?: string;
  /** How long to wait for the server to answer (default 60 s). */
  startTimeoutMs?: number;
  /** Receives progress lines. */
  log?: (line: string) => void;
}

/** Every port a dev server listens on; all of them on 127.0.0.1. */
export interface DevServerPorts {
  /** Frontend gRPC: clients, workers, the CLI. */
  grpc: number;
  /** Web UI, unless headless. */
  ui?: number;
  /** Frontend HTTP API (refuses every request unless `httpApi`). */
  http: number;
  /** The server's Prometheus `/metrics`. */
  metrics: number;
  /**
   * The history, matching and worker services' own gRPC ports. The CLI picks them and has no flag
   * for them; Loopwright reads them from the server's printed config (`--log-config`).
   */
  internal: Record<string, number>;
}

/** A running dev server this process started. */
export interface DevServer {
  /** gRPC address, `127.0.0.1:PORT`. */
  address: string;
  /** Web UI address, unless headless. */
  uiUrl?: string;
  /** The server's Prometheus endpoint, `http://127.0.0.1:PORT/metrics`. */
  metricsUrl: string;
  /** Every port it listens on. */
  ports: DevServerPorts;
  /** Whether its HTTP API answers requests (see {@link DevServerOptions.httpApi}). */
  httpApi: boolean;
  /** The codec server its Web UI decodes payloads through, when one was given. */
  codecEndpoint?: string;
  /** Process id of the Temporal server. */
  pid: number;
  /** Where the server logs. */
  logFile: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited and the lock is released. */
  stop(): Promise<void>;
}

/** The HTTP API or metrics port is taken by another program. Exit 2. */
export class ServerPortInUseError extends UsageError {
  constructor(
    readonly port: number,
    flag: '--http-port' | '--metrics-port',
  ) {
    super(
      `${flag === '--http-port' ? 'HTTP API' : 'server metrics'} port ${port} is already in use: set ${flag}, or leave it out for a free port`,
    );
  }
}

/** The address every dev server port binds to: nothing else on the machine or network reaches it. */
export const DEV_SERVER_IP = '127.0.0.1';
/** Allowed HTTP API hosts when it is off: a space cannot occur in a Host header, so every request is refused. */
const NO_HTTP_HOSTS = ['http api disabled by loopwright'];
const MIN_RETENTION_MS = 30 * 86_400_000;
const STOP_GRACE_MS = 10_000;

/**
 * Starts `temporal server start-dev` with a SQLite file (WAL), every Loopwright search attribute,
 * no news feed and no server version check, logging to `logFile`. Every port it opens is on
 * 127.0.0.1 and in {@link DevServer.ports}: gRPC, Web UI, HTTP API and metrics are chosen here,
 * the internal service ports are read back from the server's config; the HTTP API refuses every
 * request unless `httpApi`. Resolves once the server answers, its namespace has the retention
 * and the search attributes are registered. Throws {@link DevServerRunningError} when the lock
 * names a live process, {@link PortInUseError} or {@link ServerPortInUseError} when a port is
 * taken, {@link DevServerStartError} (with the log tail) when the server exits or does not answer
 * within `startTimeoutMs`.
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? port + 1000;
  const namespace = opts.namespace ?? 'default';
  const retention = retentionFlag(opts.retention ?? '720h');
  const log = opts.log ?? (() => undefined);
  const httpApi = opts.httpApi ?? false;
  const address = `${DEV_SERVER_IP}:${port}`;
  const uiUrl = opts.headless ? undefined : `http://localhost:${uiPort}`;
  const dbFile = resolve(opts.dbFile);
  const logFile = resolve(opts.logFile ?? join(dirname(dbFile), `${basename(dbFile, extname(dbFile))}.log`));
  const lockFile = opts.lockFile && resolve(opts.lockFile);
  const lock: DevServerLock = {
    pid: process.pid,
    address,
    uiUrl,
    startedAt: new Date().toISOString(),
    ownerPid: process.pid,
  };

  if (lockFile) acquireDevServerLock(lockFile, lock);
  let child: ChildProcess | undefined;
  let exited: Promise<string> | undefined;
  try {
    if (!(await isPortFree(port))) throw new PortInUseError(port, 'port');
    if (!opts.headless && !(await isPortFree(uiPort))) throw new PortInUseError(uiPort, 'UI port');
    const taken = opts.headless ? [port] : [port, uiPort];
    const httpPort = await chosenPort(opts.httpPort, '--http-port', taken);
    const metricsPort = await chosenPort(opts.metricsPort, '--metrics-port', [...taken, httpPort]);
    const cli = opts.cli ?? (await findTemporalCli({ log }));
    mkdirSync(dirname(dbFile), { recursive: true });
    mkdirSync(dirname(logFile), { recursive: true });

    const fd = openSync(logFile, 'a');
    const logStart = statSync(logFile).size;
    writeSync(fd, `--- loopwright: starting the Temporal dev server on ${address} at ${lock.startedAt}\n`);
    const args = devServerArgs({
      dbFile,
      port,
      uiPort,
      httpPort,
      metricsPort,
      httpApi,
      headless: opts.headless,
      namespace,
      codecEndpoint: opts.codecEndpoint,
      sqliteSync: opts.sqliteSync,
    });
    log(`starting the Temporal dev server: ${cli} ${args.join(' ')}`);
    // The server needs none of this process's secrets (model keys and the like): an allow-list.
    const env: NodeJS.ProcessEnv = { TEMPORAL_VERSION_CHECK_DISABLED: '1' };
    for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'USER'])
      if (process.env[name] !== undefined) env[name] = process.env[name];
    child = spawn(cli, args, { stdio: ['ignore', fd, fd], env });
    closeSync(fd);
    const started = child;
    let exitedHow: string | undefined;
    exited = new Promise<string>((done) => {
      started.once('exit', (code, signal) => done((exitedHow = signal ? `signal ${signal}` : `code ${String(code)}`)));
      started.once('error', (err) => done((exitedHow = err.message)));
    });
    const failStart = (why: string) => new DevServerStartError(why, logFile, logTail(logFile, logStart));
    const pid = child.pid;
    if (pid === undefined) throw failStart(`could not start ${cli}: ${await exited}`);
    if (lockFile) updateDevServerLock(lockFile, { ...lock, pid });

    const target: OperatorTarget = { cli, address, namespace };
    await waitUntilReady(target, retention, opts.startTimeoutMs ?? 60_000, {
      exited,
      how: () => exitedHow,
      fail: failStart,
    });
    const internal = internalPorts(readFileSync(logFile).subarray(logStart).toString('utf8'));
    const ports: DevServerPorts = {
      grpc: port,
      ...(opts.headless ? {} : { ui: uiPort }),
      http: httpPort,
      metrics: metricsPort,
      internal,
    };
    const all = Object.entries({
      gRPC: port,
      'Web UI': ports.ui,
      'HTTP API': httpPort,
      metrics: metricsPort,
      ...internal,
    }).filter(([, p]) => p !== undefined);
    log(
      `Temporal dev server ready at ${address}${uiUrl ? `, UI ${uiUrl}` : ''} (pid ${pid}, log ${logFile}); listening on ${DEV_SERVER_IP} only: ${all.map(([what, p]) => `${what} ${p}`).join(', ')}${httpApi ? '' : ' (the HTTP API refuses every request)'}`,
    );

    const running = child;
    const killOnExit = () => running.kill('SIGTERM');
    process.once('exit', killOnExit);
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        process.off('exit', killOnExit);
        await terminate(running, exited);
        if (lockFile) releaseDevServerLock(lockFile, [pid, process.pid]);
      })());
    return {
      address,
      uiUrl,
      metricsUrl: `http://${DEV_SERVER_IP}:${metricsPort}/metrics`,
      ports,
      httpApi,
      ...(opts.codecEndpoint && !opts.headless ? { codecEndpoint: opts.codecEndpoint } : {}),
      pid,
      logFile,
      stop,
    };
  } catch (err) {
    if (child) await terminate(child, exited);
    if (lockFile) releaseDevServerLock(lockFile, [process.pid, ...(child?.pid ? [child.pid] : [])]);
    throw err;
  }
}

/** What {@link devServerArgs} needs. */
export interface DevServerArgsInput {
  dbFile: string;
  port: number;
  uiPort: number;
  httpPort: number;
  metricsPort: number;
  httpApi?: boolean;
  headless?: boolean;
  namespace: string;
  /** Passed as `--ui-codec-endpoint` (not when headless). */
  codecEndpoint?: string;
  sqliteSync?: SqliteSync;
}

/** SQLite's `synchronous` settings the dev server may run with. */
export type SqliteSync = 'OFF' | 'NORMAL' | 'FULL';

/** The `temporal` arguments that start the dev server. */
export function devServerArgs(o: DevServerArgsInput): string[] {
  const httpHosts = o.httpApi ? [`${DEV_SERVER_IP}:${o.httpPort}`, `localhost:${o.httpPort}`] : NO_HTTP_HOSTS;
  return [
    'server',
    'start-dev',
    '--db-filename',
    o.dbFile,
    '--ip',
    DEV_SERVER_IP,
    '--port',
    String(o.port),
    ...(o.headless
      ? ['--headless']
      : ['--ui-ip', DEV_SERVER_IP, '--ui-port', String(o.uiPort), '--ui-disable-news-fetch']),
    // The browser, not the server, calls the codec server: the UI page hands it this endpoint.
    ...(o.codecEndpoint && !o.headless ? ['--ui-codec-endpoint', o.codecEndpoint] : []),
    '--http-port',
    String(o.httpPort),
    '--metrics-port',
    String(o.metricsPort),
    // The HTTP API port cannot be closed (the CLI opens it whatever the flags); this makes it refuse
    // every request (403) unless asked for, and then only requests addressed to 127.0.0.1 or localhost.
    '--dynamic-config-value',
    `frontend.httpAllowedHosts=${JSON.stringify(httpHosts)}`,
    // Prints the server config (to the log file) so the internal services' ports can be read back.
    '--log-config',
    ...(o.namespace === 'default' ? [] : ['--namespace', o.namespace]),
    ...SEARCH_ATTRIBUTES.flatMap((attr) => ['--search-attribute', `${attr.name}=${attr.type}`]),
    '--sqlite-pragma',
    'journal_mode=WAL',
    // WAL with synchronous=NORMAL: a killed process loses nothing committed; an OS crash or power
    // loss can lose the last transactions since the WAL was last synced, never corrupt the file.
    // (OFF, the CLI's default, can corrupt it on power loss; FULL syncs every commit. README "Durability".)
    '--sqlite-pragma',
    `synchronous=${o.sqliteSync ?? 'NORMAL'}`,
    // No call home: the server's periodic version check (the spawn also sets TEMPORAL_VERSION_CHECK_DISABLED).
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    '--log-level',
    'warn',
  ];
}

/** `720h` style flag for a retention of at least 30 days; a UsageError otherwise. */
export function retentionFlag(retention: string): string {
  const ms = parseDuration(retention);
  if (ms === undefined)
    throw new UsageError(`retention ${retention} is not a duration: use hours or days, e.g. 720h or 30d`);
  if (ms < MIN_RETENTION_MS)
    throw new UsageError(
      `retention ${retention} is under 30 days: closed runs would lose their history; use at least 720h`,
    );
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${Math.ceil(ms / 1000)}s`;
}

/** One line per port, as `dev` and the start log print them. */
export function describePorts(ports: DevServerPorts, httpApi: boolean): string[] {
  const internal = Object.entries(ports.internal)
    .map(([name, port]) => `${name} ${port}`)
    .join(', ');
  return [
    `listening on ${DEV_SERVER_IP} only:`,
    `  gRPC      ${ports.grpc}`,
    ...(ports.ui === undefined ? [] : [`  Web UI    ${ports.ui}`]),
    `  HTTP API  ${ports.http} (${httpApi ? `serves requests to ${DEV_SERVER_IP}:${ports.http} and localhost:${ports.http}; any web page you open can reach it` : 'refuses every request; --http-api turns it on'})`,
    `  metrics   ${ports.metrics} (http://${DEV_SERVER_IP}:${ports.metrics}/metrics)`,
    `  internal  ${internal || 'unknown (the server printed no config)'} (gRPC between the server's own services)`,
  ];
}

/**
 * The ports of the history, matching and worker services (and any membership or pprof port) from
 * the config `temporal server start-dev --log-config` prints; the frontend's are chosen by flags.
 */
export function internalPorts(configText: string): Record<string, number> {
  const ports: Record<string, number> = {};
  const services = /^services:\n((?:[ \t]+.*\n?)*)/m.exec(configText)?.[1] ?? '';
  for (const block of services.split(/^(?= {4}\S)/m)) {
    const name = /^ {4}(\w+):/.exec(block)?.[1];
    if (!name) continue;
    for (const [, key, value] of block.matchAll(/^\s+(grpcPort|membershipPort|httpPort): (\d+)$/gm)) {
      const n = Number(value);
      if (n === 0 || (name === 'frontend' && key !== 'membershipPort')) continue;
      ports[key === 'grpcPort' ? name : `${name} ${key === 'membershipPort' ? 'membership' : 'http'}`] = n;
    }
  }
  const pprof = /^ {4}pprof:\n {8}port: (\d+)$/m.exec(configText)?.[1];
  if (pprof && pprof !== '0') ports.pprof = Number(pprof);
  return ports;
}

/** `wanted` when it is free (a usage error when not), else a free port not in `taken`. */
async function chosenPort(
  wanted: number | undefined,
  flag: '--http-port' | '--metrics-port',
  taken: number[],
): Promise<number> {
  if (wanted) {
    if (taken.includes(wanted) || !(await isPortFree(wanted))) throw new ServerPortInUseError(wanted, flag);
    return wanted;
  }
  for (;;) {
    const port = await freePort();
    if (!taken.includes(port)) return port;
  }
}

interface Liveness {
  exited: Promise<string>;
  how: () => string | undefined;
  fail: (why: string) => Error;
}

/** Polls until the server answers, then sets retention and search attributes; fails fast if it exits. */
async function waitUntilReady(
  target: OperatorTarget,
  retention: string,
  timeoutMs: number,
  live: Liveness,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'it never answered';
  for (;;) {
    const how = live.how();
    if (how) throw live.fail(`the Temporal dev server exited early (${how})`);
    try {
      if (await isServing(target)) {
        await setRetention(target, retention);
        await ensureSearchAttributes(target);
        return;
      }
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw live.fail(
        `the Temporal dev server at ${target.address} was not ready after ${Math.round(timeoutMs / 1000)} s (${lastError})`,
      );
    }
    await Promise.race([new Promise((r) => setTimeout(r, 250)), live.exited]);
  }
}

async function terminate(child: ChildProcess, exited?: Promise<unknown>): Promise<void> {
  const done = exited ?? new Promise((r) => child.once('exit', r));
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await done;
  clearTimeout(timer);
}

function logTail(file: string, from: number, lines = 20): string {
  try {
    const text = readFileSync(file).subarray(from).toString('utf8');
    return text.trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
