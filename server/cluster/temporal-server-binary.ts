/**
 * Finding, or building, the Temporal server and its SQL schema tool for `npm run cluster`: the
 * same order as the Temporal CLI (server/temporal-binary.ts): an explicit path, PATH, a previous
 * project-local install of the pinned version, else `go install` from the Go module proxy.
 */
import { createHash } from 'crypto';
import { readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { ConfigError } from '../../common/errors';
import { type BinarySpec, type CheckResult, type Installer, locateBinary } from '../binary-locator';
import { loopwrightHome, packageRoot } from '../paths';
import { failureReason, runCommand } from '../run-command';

/**
 * The Temporal server version of the cluster and of docker-compose.yml (temporalio/server and
 * temporalio/admin-tools images). test/docker-compose.test.ts checks that the file pins the same.
 */
export const TEMPORAL_SERVER_VERSION = '1.29.7';
const MODULE = 'go.temporal.io/server';

function versionCheck(path: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  return runCommand(path, ['--version'], { env, timeoutMs: 20_000 }).then((result): CheckResult => {
    if (result.code !== 0 || result.error)
      return { ok: false, reason: `\`${path} --version\` ${failureReason(result)}` };
    if (!/version \S+/.test(result.stdout)) return { ok: false, reason: `\`${path} --version\` printed no version` };
    return { ok: true, output: result.stdout };
  });
}

/** The Temporal Web UI server version (`temporalio/ui` in docker-compose.yml is the same release). */
export const UI_SERVER_VERSION = '2.53.3';

/** `go install <target>` into the installer's folder; returns the binary `built` it made there. */
function goInstall(target: string, built: string): Installer {
  return {
    label: `go install ${target}`,
    async install({ dir, env, log }) {
      log(`  building ${target} with go install: minutes the first time`);
      const result = await runCommand('go', ['install', target], {
        env: { ...env, GOBIN: dir, GOFLAGS: '-mod=mod' },
        timeoutMs: 30 * 60_000,
      });
      if (result.code !== 0 || result.error) throw new Error(`go install failed: ${failureReason(result)}`);
      return join(dir, built);
    },
  };
}

const pinned = (output: string) => output.includes(TEMPORAL_SERVER_VERSION);

/** How the Temporal server is looked for (`TEMPORAL_SERVER`, `temporal-server` on PATH, the local install). */
export const TEMPORAL_SERVER_SPEC: BinarySpec = {
  title: 'Temporal server',
  command: 'temporal-server',
  envVar: 'TEMPORAL_SERVER',
  version: TEMPORAL_SERVER_VERSION,
  check: versionCheck,
  isPinned: pinned,
  advice: `Install Go (https://go.dev/dl) so Loopwright can build it, or set TEMPORAL_SERVER=/path/to/temporal-server (version ${TEMPORAL_SERVER_VERSION}).`,
};

/** How the SQL schema tool is looked for (`TEMPORAL_SQL_TOOL`, `temporal-sql-tool` on PATH, the local install). */
export const SQL_TOOL_SPEC: BinarySpec = {
  title: 'Temporal SQL schema tool',
  command: 'temporal-sql-tool',
  envVar: 'TEMPORAL_SQL_TOOL',
  version: TEMPORAL_SERVER_VERSION,
  check: versionCheck,
  isPinned: pinned,
  advice: `Install Go (https://go.dev/dl) so Loopwright can build it, or set TEMPORAL_SQL_TOOL=/path/to/temporal-sql-tool (version ${TEMPORAL_SERVER_VERSION}).`,
};

/** Options of the finders below. */
export interface FindServerOptions {
  env?: NodeJS.ProcessEnv;
  home?: string;
  log?: (line: string) => void;
}

/** True when `go version` runs. */
export async function hasGo(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const result = await runCommand('go', ['version'], { env, timeoutMs: 20_000 });
  return result.code === 0 && !result.error;
}

async function find(spec: BinarySpec, installer: Installer, opts: FindServerOptions): Promise<string> {
  const env = opts.env ?? process.env;
  const home = opts.home ?? loopwrightHome(env);
  try {
    return await locateBinary(spec, { env, home, log: opts.log, install: false, installers: [] });
  } catch (err) {
    if (err instanceof ConfigError) throw err;
  }
  if (!(await hasGo(env))) {
    throw new ConfigError(
      `the ${spec.title} ${spec.version} is not installed and Go is not on PATH to build it: install Go, or set ${spec.envVar} to a ${spec.command} binary`,
    );
  }
  return locateBinary(spec, { env, home, log: opts.log, installers: [installer] });
}

/** Path of a working `temporal-server` of version {@link TEMPORAL_SERVER_VERSION}, built with `go install` into `<home>/temporal/bin/` when needed. */
export function findTemporalServer(opts: FindServerOptions = {}): Promise<string> {
  return find(TEMPORAL_SERVER_SPEC, goInstall(`${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`, 'server'), opts);
}

/**
 * The authorizer name (TEMPORAL_AUTH_AUTHORIZER) that the stock server does not know and
 * deploy/temporal-server/ adds: Temporal's default authorizer, except that the worker APIs (polling
 * task queues, answering tasks, activity heartbeats) need the worker role.
 */
export const LOOPWRIGHT_AUTHORIZER = 'loopwright';

/** True when the cluster's server variables ask for the {@link LOOPWRIGHT_AUTHORIZER}. */
export function usesLoopwrightAuthorizer(serverEnv: Record<string, string | undefined> | undefined): boolean {
  return serverEnv?.TEMPORAL_AUTH_AUTHORIZER?.trim().toLowerCase() === LOOPWRIGHT_AUTHORIZER;
}

/** The Go module of the server with the Loopwright authorizer. */
export function authorizerServerSource(): string {
  return join(packageRoot(), 'deploy', 'temporal-server');
}

/**
 * A hash of the module's sources (go.mod, go.sum, the non-test .go files): the build links it into
 * the binary's `--version`, so a local install built from other sources is rebuilt.
 */
export function authorizerServerSourceHash(dir: string = authorizerServerSource()): string {
  const hash = createHash('sha256');
  const files = readdirSync(dir)
    .filter((f) => f === 'go.mod' || f === 'go.sum' || (f.endsWith('.go') && !f.endsWith('_test.go')))
    .sort();
  for (const f of files)
    hash
      .update(`${f}\0`)
      .update(readFileSync(join(dir, f)))
      .update('\0');
  return hash.digest('hex').slice(0, 12);
}

/** How the server with the Loopwright authorizer is looked for (`LOOPWRIGHT_TEMPORAL_SERVER`, PATH, the local install). */
export const AUTHORIZER_SERVER_SPEC: BinarySpec = {
  title: 'Temporal server with the Loopwright authorizer',
  command: 'loopwright-temporal-server',
  envVar: 'LOOPWRIGHT_TEMPORAL_SERVER',
  version: TEMPORAL_SERVER_VERSION,
  check: versionCheck,
  isPinned: (output) =>
    output.includes(TEMPORAL_SERVER_VERSION) &&
    output.includes(`loopwright authorizer ${authorizerServerSourceHash()}`),
  advice: `Install Go (https://go.dev/dl) so Loopwright can build it from deploy/temporal-server/, or set LOOPWRIGHT_TEMPORAL_SERVER to such a build (version ${TEMPORAL_SERVER_VERSION}).`,
};

/**
 * `go build` of deploy/temporal-server/ into the installer's folder, the source hash linked in. The
 * same Go settings as {@link goInstall} of the stock server, so the server's packages come from
 * Go's build cache when that was built before (seconds instead of minutes).
 */
const buildAuthorizerServer: Installer = {
  label: 'go build deploy/temporal-server',
  async install({ dir, env, log }) {
    log('  building deploy/temporal-server with go build: minutes the first time, seconds with a warm Go build cache');
    const out = join(dir, 'loopwright-temporal-server');
    const result = await runCommand(
      'go',
      ['build', '-o', out, '-ldflags', `-X main.sourceHash=${authorizerServerSourceHash()}`, '.'],
      { cwd: authorizerServerSource(), env: { ...env, GOFLAGS: '-mod=readonly' }, timeoutMs: 30 * 60_000 },
    );
    if (result.code !== 0 || result.error) throw new Error(`go build failed: ${failureReason(result)}`);
    return out;
  },
};

/**
 * Path of a working server with the {@link LOOPWRIGHT_AUTHORIZER} (a build of deploy/temporal-server/
 * from its current sources), built with `go build` into `<home>/temporal/bin/` when needed.
 */
export function findAuthorizerServer(opts: FindServerOptions = {}): Promise<string> {
  return find(AUTHORIZER_SERVER_SPEC, buildAuthorizerServer, opts);
}

/** Path of a working `temporal-sql-tool`, found or built like {@link findTemporalServer}. */
export function findSqlTool(opts: FindServerOptions = {}): Promise<string> {
  return find(SQL_TOOL_SPEC, goInstall(`${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`, 'sql'), opts);
}

/** How the Web UI server is looked for (`TEMPORAL_UI_SERVER`, `temporal-ui-server` on PATH, the local install). */
export const UI_SERVER_SPEC: BinarySpec = {
  title: 'Temporal Web UI server',
  command: 'temporal-ui-server',
  envVar: 'TEMPORAL_UI_SERVER',
  version: UI_SERVER_VERSION,
  check: versionCheck,
  isPinned: (output) => output.includes(UI_SERVER_VERSION),
  advice: `Install Go (https://go.dev/dl) so Loopwright can build it, or set TEMPORAL_UI_SERVER=/path/to/ui-server (version ${UI_SERVER_VERSION}).`,
};

/** Path of a working Web UI server (github.com/temporalio/ui-server, its assets built in), found or built like {@link findTemporalServer}. */
export function findUiServer(opts: FindServerOptions = {}): Promise<string> {
  return find(
    UI_SERVER_SPEC,
    goInstall(`github.com/temporalio/ui-server/v2/cmd/server@v${UI_SERVER_VERSION}`, 'server'),
    opts,
  );
}

/**
 * The folder of the server's SQL schema files (`postgresql/v12/temporal/versioned`, ...):
 * `TEMPORAL_SCHEMA_DIR`, else the `schema/` folder of the server's module in Go's module cache
 * (`go mod download`, which fetches it through the module proxy when it is not there yet).
 */
export async function findSchemaDir(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const explicit = env.TEMPORAL_SCHEMA_DIR?.trim();
  if (explicit) return explicit;
  const result = await runCommand('go', ['mod', 'download', '-json', `${MODULE}@v${TEMPORAL_SERVER_VERSION}`], {
    env,
    timeoutMs: 10 * 60_000,
  });
  if (result.code !== 0 || result.error) {
    throw new ConfigError(
      `cannot find the Temporal ${TEMPORAL_SERVER_VERSION} schema files (go mod download ${failureReason(result)}): install Go, or set TEMPORAL_SCHEMA_DIR to the server's schema/ folder`,
    );
  }
  return join((JSON.parse(result.stdout) as { Dir: string }).Dir, 'schema');
}
