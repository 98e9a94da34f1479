/**
 * What every Temporal process of the cluster is told, and what docker-compose.yml shares with it:
 * the deploy files (config template, dynamic config, schema and setup scripts), the security
 * variables passed through, each process's command line and its ports.
 */
import { join } from 'path';
import { isPortFree } from '../free-port';
import { packageRoot } from '../paths';
import { TEMPORAL_CONNECTION_VARIABLES } from '../temporal-connection';
import type { ClusterProcess } from './processes';

const DEPLOY = () => join(packageRoot(), 'deploy');

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

/** The client connection variables set in `env` (TEMPORAL_TLS_*, TEMPORAL_API_KEY), for the CLI, setup and UI. */
export function connectionVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of TEMPORAL_CONNECTION_VARIABLES) if (env[name]?.trim()) vars[name] = env[name]!.trim();
  return vars;
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
export async function temporalPorts(
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

/** One Temporal service as a process of the cluster in `dir`, its log in `<dir>/logs/<name>.log`. */
export function temporalProcess(
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
