/**
 * The cluster's Web UI and the codec server it decodes payloads through (the cluster's own, or
 * TEMPORAL_CODEC_ENDPOINT's).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { UsageError } from '../../common/errors';
import { loopwrightHome, packageRoot } from '../paths';
import { type ClusterProcess, type ClusterState, isRunning, logTail, waitFor } from './processes';

/** The Web UI server on 127.0.0.1:`port` for the first frontend, from a config file written into `<dir>/ui/`. */
export async function startUi(
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
export async function codecEndpoint(
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
