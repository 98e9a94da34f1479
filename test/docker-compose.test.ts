/**
 * docker-compose.yml, Dockerfile, .dockerignore and deploy/temporal-setup.sh: the
 * scale-out deployment (Temporal on PostgreSQL, Web UI, N Loopwright workers).
 *
 * No Docker engine is needed (none exists where this is written): the compose file and
 * Dockerfile are parsed and checked statically, the setup script is run for real by `sh`
 * against a fake `temporal` CLI that keeps the server's state in a temp dir, and the server's
 * start script against a stand-in `temporal-server`. What compose shares with `npm run cluster`
 * (the config template, the schema and setup scripts, the version) is checked here to be the
 * same files and the same command line; the cluster suite runs them for real. When a `docker compose` client is
 * installed, `docker compose config -q` also validates the file against the spec.
 */
import { spawnSync } from 'child_process';
import { createHash } from 'crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join, resolve } from 'path';
import * as ts from 'typescript';
import { parse } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { dynamicConfigFile, sharedDeployFiles, temporalServerArgs } from '../server/cluster/temporal-config';
import { TEMPORAL_CONNECTION_VARIABLES } from '../server/temporal-connection';
import { TEMPORAL_SERVER_VERSION } from '../server/cluster/temporal-server-binary';
import { must, mustTake } from '../common/must';

const ROOT = resolve(__dirname, '..');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const SETUP_SCRIPT = join(ROOT, 'deploy', 'temporal-setup.sh');
const SECCOMP_PROFILE = './deploy/seccomp-bwrap.json';

type Service = {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: Array<string | number | { target?: number | string; published?: number | string }>;
  volumes?: Array<string | { type?: string; source?: string; target?: string }>;
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[] };
  deploy?: { replicas?: number | string };
  container_name?: string;
  security_opt?: string[];
  privileged?: boolean;
  cap_add?: string[];
};

const compose = parse(readFileSync(COMPOSE_FILE, 'utf8')) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};

/** The version of an image reference, `temporalio/admin-tools:1.29.7-tctl-1.18` → `1.29.7`. */
const imageVersion = (image: string | undefined): string | undefined => image?.split(':')[1]?.split('-')[0];

function service(name: string): Service {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service "${name}"`);
  return s;
}

/** What compose substitutes for `${VAR:-default}` / `${VAR-default}` / `${VAR}` when VAR is unset. */
function unsetDefault(value: unknown): string {
  return String(value ?? '')
    .replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, _name: string, dflt?: string) => dflt ?? '')
    .replace(/\$\$/g, '$');
}

/** The environment of a service, as compose would pass it with no variables set on the host. */
function env(name: string): Record<string, string> {
  const raw = service(name).environment ?? {};
  const out: Record<string, string> = {};
  if (Array.isArray(raw)) {
    for (const entry of raw) {
      const eq = entry.indexOf('=');
      if (eq > 0) out[entry.slice(0, eq)] = unsetDefault(entry.slice(eq + 1));
    }
  } else {
    for (const [k, v] of Object.entries(raw)) out[k] = unsetDefault(v);
  }
  return out;
}

/** Raw (uninterpolated) environment entry, to check it is taken from the host. */
function rawEnv(name: string, key: string): string | undefined {
  const raw = service(name).environment ?? {};
  if (Array.isArray(raw)) {
    const entry = raw.find((e) => e.startsWith(`${key}=`));
    return entry?.slice(key.length + 1);
  }
  return key in raw ? String(raw[key]) : undefined;
}

function dependsOn(name: string): Record<string, string> {
  const raw = service(name).depends_on ?? {};
  if (Array.isArray(raw)) return Object.fromEntries(raw.map((d) => [d, 'service_started']));
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, v?.condition ?? 'service_started']));
}

/** True if the service publishes container port `port` on the same host port. */
function publishes(name: string, port: number): boolean {
  return (service(name).ports ?? []).some((p) => {
    if (typeof p === 'object') return String(p.target) === String(port) && String(p.published) === String(port);
    const parts = unsetDefault(p)
      .replace(/\/tcp$/, '')
      .split(':');
    return parts.length >= 2 && parts[parts.length - 1] === String(port) && parts[parts.length - 2] === String(port);
  });
}

function argv(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value.map(String) : value.split(/\s+/).filter(Boolean);
}

/** Hours in a Go-style duration such as 720h, 30d or 720h0m0s. */
function durationHours(text: string): number {
  const units: Record<string, number> = { d: 24, h: 1, m: 1 / 60, s: 1 / 3600 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)([dhms])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new Error(`not a duration: "${text}"`);
  }
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * (units[u ?? ''] ?? NaN), 0);
}

// ---------------------------------------------------------------------------------------
describe('docker-compose.yml services', () => {
  it('declares postgresql, temporal-schema, temporal, temporal-setup, temporal-ui and worker', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      expect.arrayContaining(['postgresql', 'temporal-schema', 'temporal', 'temporal-setup', 'temporal-ui', 'worker']),
    );
  });

  it('postgresql runs postgres 16 with a healthcheck and keeps its data in a named volume', () => {
    const pg = service('postgresql');
    expect(pg.image).toMatch(/^postgres:16(\.|-|$)/);
    expect(argv(pg.healthcheck?.test).join(' ')).toContain('pg_isready');
    const dataVolume = (pg.volumes ?? [])
      .map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`))
      .find((v) => v.split(':')[1] === '/var/lib/postgresql/data');
    expect(dataVolume).toBeDefined();
    const volumeName = dataVolume!.split(':')[0];
    expect(compose.volumes ?? {}).toHaveProperty([volumeName]);
  });

  /** A service's mounts as `host:container[:mode]` strings. */
  const mounts = (name: string) =>
    (service(name).volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`));
  /** The host file (resolved from the repository) mounted at `target`, or inside a folder mounted above it. */
  const hostPath = (name: string, target: string): string | undefined => {
    for (const m of mounts(name)) {
      const [host = '', inside = ''] = m.split(':');
      if (target === inside) return resolve(ROOT, host);
      if (target.startsWith(`${inside}/`)) return resolve(ROOT, host, target.slice(inside.length + 1));
    }
    return undefined;
  };
  const DB_VARS = ['TEMPORAL_DB_HOST', 'TEMPORAL_DB_PORT', 'TEMPORAL_DB_USER', 'TEMPORAL_DB_PASSWORD'];

  it('temporal is the plain temporalio/server image on the postgresql service, started once the schema job is done', () => {
    expect(service('temporal').image).toMatch(/^temporalio\/server:1\.[23]\d\.\d+$/);
    const e = env('temporal');
    expect(e.TEMPORAL_DB_HOST).toBe('postgresql');
    expect(e.TEMPORAL_DB_PORT).toBe('5432');
    // Same credentials as the database container creates.
    expect(e.TEMPORAL_DB_USER).toBe(env('postgresql').POSTGRES_USER);
    expect(e.TEMPORAL_DB_PASSWORD).toBe(env('postgresql').POSTGRES_PASSWORD);
    expect(e.TEMPORAL_DB_PASSWORD).not.toBe('');
    expect(e.TEMPORAL_BIND_IP).toBe('0.0.0.0');
    expect(dependsOn('temporal')).toEqual({ 'temporal-schema': 'service_completed_successfully' });
  });

  it('temporal-schema runs deploy/temporal-schema.sh (the script npm run cluster runs) in admin-tools, with the database temporal uses', () => {
    const schema = service('temporal-schema');
    expect(schema.image).toMatch(/^temporalio\/admin-tools:1\.[23]\d\.\d+/);
    expect(dependsOn('temporal-schema')).toEqual({ postgresql: 'service_healthy' });
    expect([...argv(schema.entrypoint), ...argv(schema.command)]).toEqual(['/bin/sh', '/deploy/temporal-schema.sh']);
    expect(hostPath('temporal-schema', '/deploy/temporal-schema.sh')).toBe(sharedDeployFiles().schemaScript);
    for (const name of DB_VARS)
      expect({ name, value: env('temporal-schema')[name] }).toEqual({ name, value: env('temporal')[name] });
    // admin-tools keeps the schema files and the tool where the script looks by default.
    expect(env('temporal-schema').TEMPORAL_SCHEMA_DIR).toBe('/etc/temporal/schema');
  });

  it('compose and npm run cluster share one version: server and both admin-tools jobs pin TEMPORAL_SERVER_VERSION', () => {
    expect(service('temporal').image!.split(':')[1]).toBe(TEMPORAL_SERVER_VERSION);
    for (const job of ['temporal-schema', 'temporal-setup'])
      expect({ job, version: imageVersion(service(job).image) }).toEqual({
        job,
        version: TEMPORAL_SERVER_VERSION,
      });
  });

  it('compose and npm run cluster share one config template: temporal mounts the folder the cluster starts from', () => {
    const root = env('temporal').TEMPORAL_CONFIG_ROOT ?? '/etc/temporal/loopwright';
    expect(hostPath('temporal', root)).toBe(sharedDeployFiles().configRoot);
    expect(hostPath('temporal', `${root}/config/loopwright.yaml`)).toBe(sharedDeployFiles().template);
    expect(existsSync(sharedDeployFiles().template)).toBe(true);
    // The dynamic config the template is told to read is the cluster's, through the same mount.
    expect(hostPath('temporal', env('temporal').TEMPORAL_DYNAMIC_CONFIG ?? '')).toBe(dynamicConfigFile());
    expect(() => parse(readFileSync(dynamicConfigFile(), 'utf8'))).not.toThrow();
  });

  it("compose's server command line is the cluster's with every service: deploy/temporal-start.sh run against a stand-in temporal-server", () => {
    const temporal = service('temporal');
    expect([...argv(temporal.entrypoint), ...argv(temporal.command)]).toEqual(['/bin/sh', '/deploy/temporal-start.sh']);
    expect(hostPath('temporal', '/deploy/temporal-start.sh')).toBe(join(ROOT, 'deploy', 'temporal-start.sh'));
    const bin = mkdtempSync(join(tmpdir(), 'loopwright-start-'));
    try {
      writeFileSync(join(bin, 'temporal-server'), '#!/bin/sh\nprintf "%s\\n" "$TEMPORAL_BROADCAST_ADDRESS" "$@"\n');
      writeFileSync(join(bin, 'hostname'), '#!/bin/sh\necho 172.18.0.5 10.0.0.7\n');
      chmodSync(join(bin, 'temporal-server'), 0o755);
      chmodSync(join(bin, 'hostname'), 0o755);
      const start = (extra: Record<string, string> = {}) => {
        const r = spawnSync('sh', [join(ROOT, 'deploy', 'temporal-start.sh')], {
          encoding: 'utf8',
          env: { PATH: `${bin}:/usr/bin:/bin`, ...env('temporal'), ...extra },
        });
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        return r.stdout.trim().split('\n');
      };
      const [broadcast, ...args] = start();
      expect(broadcast).toBe('172.18.0.5');
      const services = ['frontend', 'history', 'matching', 'worker'];
      expect(args).toEqual(temporalServerArgs('/etc/temporal/loopwright', services));
      // The cluster starts the same binary with the same flags, one service per process.
      expect(temporalServerArgs(sharedDeployFiles().configRoot, ['history']).slice(2)).toEqual(
        args.slice(2, args.indexOf('start') + 1).concat(['--service', 'history']),
      );
      // With an authorizer, the internal frontend too (the template defines it only then).
      expect(start({ USE_INTERNAL_FRONTEND: 'true' }).slice(1)).toEqual(
        temporalServerArgs('/etc/temporal/loopwright', [...services, 'internal-frontend']),
      );
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it('publishes Temporal gRPC on host port 7233 and the Web UI on host port 8080', () => {
    expect(publishes('temporal', 7233)).toBe(true);
    expect(publishes('temporal-ui', 8080)).toBe(true);
  });

  it("publishes them on the host's loopback only unless LOOPWRIGHT_PUBLISH_IP says otherwise, and nothing else at all", () => {
    const published = Object.entries(compose.services).flatMap(([name, s]) =>
      (s.ports ?? []).map((p) => [name, p] as const),
    );
    expect(published.map(([name]) => name).sort()).toEqual(['temporal', 'temporal-ui']);
    for (const [, p] of published) {
      expect(typeof p).toBe('string');
      expect(p).toMatch(/^\$\{LOOPWRIGHT_PUBLISH_IP:-127\.0\.0\.1\}:\d+:\d+$/);
      expect(unsetDefault(p).split(':')[0]).toBe('127.0.0.1');
    }
  });

  it('temporal-ui is a pinned temporalio/ui pointed at temporal:7233, started once temporal-setup has set the server up', () => {
    expect(service('temporal-ui').image).toMatch(/^temporalio\/ui:2\.\d+\.\d+$/);
    expect(env('temporal-ui').TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(dependsOn('temporal-ui')['temporal-setup']).toBe('service_completed_successfully');
  });

  it('temporal-ui grants CORS to its own origin only (another origin could make credentialed calls and read the CSRF cookie)', () => {
    expect(env('temporal-ui').TEMPORAL_CORS_ORIGINS?.split(',')).toEqual(['http://localhost:8080']);
    expect(env('temporal-ui').TEMPORAL_CORS_UNSAFE_ALLOW_ALL_ORIGINS).toBeUndefined();
  });

  it('worker is built from . with ./Dockerfile and runs node dist/workers/main.js', () => {
    const w = service('worker');
    const build = typeof w.build === 'string' ? { context: w.build } : w.build;
    expect(build?.context).toBe('.');
    expect(build?.dockerfile ?? 'Dockerfile').toBe('Dockerfile');
    expect(existsSync(join(ROOT, 'Dockerfile'))).toBe(true);
    expect(argv(w.command)).toEqual(['node', 'dist/workers/main.js']);
  });

  it('worker gets the Temporal connection, task queue and Anthropic settings it needs', () => {
    const e = env('worker');
    expect(e.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(e.TEMPORAL_NAMESPACE).toBe('default');
    expect(e.LOOPWRIGHT_TASK_QUEUE).toBe('loopwright');
    // Secrets and model choices come from the host / .env, with empty defaults.
    for (const key of [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'LOOPWRIGHT_WORKER_MODEL',
      'LOOPWRIGHT_CHECKER_MODEL',
    ]) {
      expect(rawEnv('worker', key)).toBe(`\${${key}:-}`);
    }
  });

  it('worker replicas share one volume for agent transcripts and worktrees', () => {
    const worker = service('worker');
    const env = worker.environment as Record<string, string>;
    const mounts = (worker.volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`));
    const data = mounts.find((m) => m.split(':')[1] === '/data');
    expect(data).toBeDefined();
    expect(compose.volumes ?? {}).toHaveProperty([data!.split(':')[0]]);
    expect(env.LOOPWRIGHT_TRANSCRIPTS).toMatch(/^\/data\//);
    expect(env.LOOPWRIGHT_WORKTREES).toMatch(/^\/data\//);
  });

  it('worker starts only after temporal-setup has completed successfully', () => {
    expect(dependsOn('worker')['temporal-setup']).toBe('service_completed_successfully');
  });

  it('worker scales: 2 replicas by default, LOOPWRIGHT_WORKERS overrides, no fixed container_name', () => {
    const w = service('worker');
    expect(String(w.deploy?.replicas)).toBe('${LOOPWRIGHT_WORKERS:-2}');
    expect(unsetDefault(w.deploy?.replicas)).toBe('2');
    expect(w.container_name).toBeUndefined();
  });

  it('worker gets what bubblewrap needs in a container: the seccomp profile, no AppArmor mount ban, a mountable /proc, no setuid', () => {
    const w = service('worker');
    expect([...(w.security_opt ?? [])].sort()).toEqual(
      [`seccomp=${SECCOMP_PROFILE}`, 'apparmor=unconfined', 'systempaths=unconfined', 'no-new-privileges:true'].sort(),
    );
    // What the worker must not get instead.
    expect(w.privileged).toBeUndefined();
    expect((w.cap_add ?? []).map((c) => c.replace(/^CAP_/, ''))).not.toContain('SYS_ADMIN');
    expect(rawEnv('worker', 'LOOPWRIGHT_SANDBOX')).toBe('${LOOPWRIGHT_SANDBOX:-}');
  });

  it('temporal-setup runs deploy/temporal-setup.sh (the script npm run cluster runs) in admin-tools once temporal has started, on the worker namespace', () => {
    const setup = service('temporal-setup');
    expect(setup.image).toMatch(/^temporalio\/admin-tools:1\.[23]\d\.\d+/);
    // Same server release as the temporal service.
    expect(imageVersion(setup.image)).toBe(service('temporal').image?.split(':')[1]);
    // The script itself waits until the server answers SERVING (temporalio/server has no CLI for a healthcheck).
    expect(dependsOn('temporal-setup').temporal).toBe('service_started');
    expect(readFileSync(SETUP_SCRIPT, 'utf8')).toMatch(/wait_until "the Temporal server to be SERVING"/);
    expect(mounts('temporal-setup')).toContain('./deploy/temporal-setup.sh:/deploy/temporal-setup.sh:ro');
    expect(hostPath('temporal-setup', '/deploy/temporal-setup.sh')).toBe(sharedDeployFiles().setupScript);
    expect([...argv(setup.entrypoint), ...argv(setup.command)]).toEqual(['/bin/sh', '/deploy/temporal-setup.sh']);
    expect(env('temporal-setup').TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(env('temporal-setup').TEMPORAL_NAMESPACE).toBe(env('worker').TEMPORAL_NAMESPACE);
  });

  it('namespace retention defaults to at least 720h in temporal-setup (which creates the namespace)', () => {
    expect(durationHours(env('temporal-setup').LOOPWRIGHT_RETENTION ?? '')).toBeGreaterThanOrEqual(720);
  });

  it('deploy/temporal-setup.sh lists exactly the SEARCH_ATTRIBUTES of common/search-attributes.ts, with their types', () => {
    const script = readFileSync(SETUP_SCRIPT, 'utf8');
    const list = /^SEARCH_ATTRIBUTES="([^"]*)"/m.exec(script);
    expect(list).not.toBeNull();
    const pairs = (list?.[1] ?? '').split(/\s+/).filter(Boolean).sort();
    expect(pairs).toEqual(SEARCH_ATTRIBUTES.map((a) => `${a.name}:${a.type}`).sort());
  });
});

// ---------------------------------------------------------------------------------------
/**
 * A stand-in for the `temporal` CLI of temporalio/admin-tools. State lives in $FAKE_STATE:
 *   calls       every invocation's arguments, one a line
 *   namespace   present once the namespace exists
 *   attributes  "Name Type" lines of registered custom search attributes
 *   retention   the last retention set with `namespace update`
 * FAKE_FAIL_CREATE=1 makes `search-attribute create` fail like an unreachable server.
 * FAKE_ENUM_TYPES=1 prints types as INDEXED_VALUE_TYPE_KEYWORD instead of Keyword.
 * FAKE_MAPPING_LAG=N makes the first N \`workflow count\` queries fail as a frontend whose namespace
 * cache has not caught up yet; a query naming an unregistered attribute always fails.
 * Errors are worded like the real CLI and server.
 */
const FAKE_TEMPORAL = `#!/bin/sh
state=$FAKE_STATE
echo "$*" >> "$state/calls"
cmd="$1 $2 $3"
shift 3 || true
ns= name= type= retention= query=
while [ $# -gt 0 ]; do
  case $1 in
    --namespace|-n) ns=$2; shift ;;
    --name) name=$2; shift ;;
    --type) type=$2; shift ;;
    --retention) retention=$2; shift ;;
    --query) query=$2; shift ;;
  esac
  shift
done
case $cmd in
  "operator cluster health")
    echo "SERVING" ;;
  "operator namespace describe")
    if [ -f "$state/namespace" ]; then echo "NamespaceInfo.Name  $ns"; else echo "Error: Namespace $ns is not found." >&2; exit 1; fi ;;
  "operator namespace create")
    if [ -f "$state/namespace" ]; then echo "Error: unable to create namespace: Namespace already exists." >&2; exit 1; fi
    echo "$ns" > "$state/namespace"; echo "Namespace $ns successfully registered." ;;
  "operator namespace update")
    [ -f "$state/namespace" ] || { echo "Error: Namespace $ns is not found." >&2; exit 1; }
    echo "$retention" > "$state/retention"; echo "Namespace $ns update succeeded." ;;
  "operator search-attribute list")
    [ -f "$state/namespace" ] || { echo "Error: Namespace $ns is not found." >&2; exit 1; }
    printf '  %-22s %s\\n' Name Type ExecutionStatus Keyword
    touch "$state/attributes"
    while read -r n t; do
      if [ "$FAKE_ENUM_TYPES" = 1 ]; then t=INDEXED_VALUE_TYPE_$(echo "$t" | tr a-z A-Z); fi
      printf '  %-22s %s\\n' "$n" "$t"
    done < "$state/attributes" ;;
  "operator search-attribute create")
    if [ "$FAKE_FAIL_CREATE" = 1 ]; then echo "Error: unable to add search attributes: connection refused" >&2; exit 1; fi
    touch "$state/attributes"
    existing=$(awk -v n="$name" '$1 == n { print $2 }' "$state/attributes")
    if [ -n "$existing" ] && [ "$existing" != "$type" ]; then
      echo "Error: search attribute $name already exists and has different type $existing" >&2; exit 1
    elif [ -n "$existing" ]; then
      echo "Error: unable to add search attributes: Search attribute $name already exists." >&2; exit 1
    fi
    echo "$name $type" >> "$state/attributes"; echo "Search attributes have been added" ;;
  "workflow count --address")
    touch "$state/attributes" "$state/counts"
    echo x >> "$state/counts"
    if [ "$(wc -l < "$state/counts")" -le "\${FAKE_MAPPING_LAG:-0}" ]; then
      echo "Error: Namespace $ns has no mapping defined for search attribute LoopName" >&2; exit 1
    fi
    for n in $(printf '%s\n' "$query" | grep -oE '[A-Za-z]+ =' | cut -d' ' -f1); do
      awk -v n="$n" '$1 == n { found = 1 } END { exit !found }' "$state/attributes" \
        || { echo "Error: invalid query: invalid search attribute: $n" >&2; exit 1; }
    done
    echo "Total: 0" ;;
  *)
    echo "fake temporal: unexpected command: $cmd" >&2; exit 2 ;;
esac
`;

type Run = { status: number | null; output: string; calls: string[]; attributes: string[]; retention?: string };

describe('deploy/temporal-setup.sh (run by sh against a fake temporal CLI)', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'loopwright-setup-'));
    writeFileSync(join(dir, 'temporal'), FAKE_TEMPORAL);
    chmodSync(join(dir, 'temporal'), 0o755);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Run the script with temporal-setup's compose environment plus fast retries. */
  function runSetup(
    opts: { namespaceExists?: boolean; attributes?: string[]; extraEnv?: Record<string, string> } = {},
  ): Run {
    if (opts.namespaceExists ?? true) writeFileSync(join(dir, 'namespace'), 'default\n');
    if (opts.attributes) writeFileSync(join(dir, 'attributes'), opts.attributes.map((a) => `${a}\n`).join(''));
    const r = spawnSync('sh', [SETUP_SCRIPT], {
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: `${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        FAKE_STATE: dir,
        ...env('temporal-setup'),
        TEMPORAL_SETUP_RETRY_DELAY: '0',
        TEMPORAL_SETUP_ATTEMPTS: '3',
        TEMPORAL_SETUP_TIMEOUT: '30',
        ...opts.extraEnv,
      },
    });
    const read = (f: string) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8') : '');
    return {
      status: r.status,
      output: `${r.stdout}${r.stderr}`,
      calls: read('calls').split('\n').filter(Boolean),
      attributes: read('attributes').split('\n').filter(Boolean).sort(),
      retention: read('retention').trim() || undefined,
    };
  }

  const expected = SEARCH_ATTRIBUTES.map((a) => `${a.name} ${a.type}`).sort();

  it.each([
    ['Keyword/Int/Double', '0'],
    ['INDEXED_VALUE_TYPE_*', '1'],
  ])(
    'fresh server (types listed as %s): registers every search attribute with its type in namespace default, sets 720h retention, exits 0',
    (_style, enumTypes) => {
      const run = runSetup({ extraEnv: { FAKE_ENUM_TYPES: enumTypes } });
      expect(run.output).not.toMatch(/ERROR/);
      expect(run.status).toBe(0);
      expect(run.attributes).toEqual(expected);
      for (const { name, type } of SEARCH_ATTRIBUTES) {
        expect(run.calls).toContain(
          `operator search-attribute create --namespace default --name ${name} --type ${type}`,
        );
      }
      expect(run.calls).toContain('operator namespace update --namespace default --retention 720h');
      expect(durationHours(run.retention!)).toBeGreaterThanOrEqual(720);
    },
  );

  it('re-run on a server that already has every attribute: "already exists" is tolerated, exits 0, nothing changes', () => {
    const run = runSetup({ attributes: expected });
    expect(run.status).toBe(0);
    expect(run.attributes).toEqual(expected);
    expect(run.output).toMatch(/already exists, kept/);
    expect(run.retention).toBe('720h');
  });

  it('namespace not created yet (the server makes none): the script creates it, then registers everything and exits 0', () => {
    const run = runSetup({ namespaceExists: false });
    expect(run.status).toBe(0);
    expect(run.calls).toContain('operator namespace create --namespace default --retention 720h');
    expect(run.attributes).toEqual(expected);
  });

  it('an attribute already registered with another type: exits non-zero and names it', () => {
    const run = runSetup({ attributes: ['LoopAttempt Keyword'] });
    expect(run.status).not.toBe(0);
    expect(run.output).toMatch(/LoopAttempt/);
    expect(run.output).toMatch(/different type/);
  });

  it('search-attribute create keeps failing: exits non-zero after the configured number of attempts', () => {
    const run = runSetup({ extraEnv: { FAKE_FAIL_CREATE: '1' } });
    expect(run.status).not.toBe(0);
    expect(run.calls.filter((c) => c.startsWith('operator search-attribute create'))).toHaveLength(3);
    expect(run.output).toMatch(/connection refused/);
  });

  it('waits until every frontend uses the search attributes (its namespace cache lags their registration), then exits 0', () => {
    const run = runSetup({ extraEnv: { FAKE_MAPPING_LAG: '3', TEMPORAL_SETUP_FRONTENDS: 'fe-a:7233 fe-b:7233' } });
    expect(run.output).not.toMatch(/ERROR/);
    expect(run.status).toBe(0);
    const counts = run.calls.filter((c) => c.startsWith('workflow count'));
    // Refused 3 times by the first frontend, then once each; the query names every attribute.
    expect(counts.map((c) => c.split(' ')[3])).toEqual([
      'fe-a:7233',
      'fe-a:7233',
      'fe-a:7233',
      'fe-a:7233',
      'fe-b:7233',
    ]);
    for (const { name } of SEARCH_ATTRIBUTES) expect(counts[0]).toContain(`${name} =`);
    expect(run.output).toMatch(/waiting for the frontend at fe-a:7233 to use every search attribute/);
  });
});

// ---------------------------------------------------------------------------------------
describe('docker-compose.yml security notes (how production is protected)', () => {
  const text = readFileSync(COMPOSE_FILE, 'utf8');
  /** The lines of a service's block in the raw file, comments included. */
  const block = (name: string) => {
    const lines = text.split('\n');
    const start = lines.findIndex((l) => l === `  ${name}:`);
    const end = lines.findIndex((l, i) => i > start && /^ {2}\S/.test(l));
    return lines.slice(start, end === -1 ? undefined : end).join('\n');
  };
  const commented = (name: string, key: string) => new RegExp(`^\\s+# ${key}: \\S`, 'm').test(block(name));

  it('the header says what is unprotected as shipped and names mTLS, the authorizer and the claim mapper', () => {
    const header = text.slice(0, text.indexOf('\nname:'));
    expect(header).toMatch(/^# Security: /m);
    for (const word of [
      'mTLS',
      'TEMPORAL_AUTH_AUTHORIZER=default',
      'TEMPORAL_AUTH_CLAIM_MAPPER=default',
      'TEMPORAL_TLS_REQUIRE_CLIENT_AUTH=true',
      'LOOPWRIGHT_PUBLISH_IP',
    ]) {
      expect(header).toContain(word);
    }
    // The client side, as Loopwright's worker and CLI read it.
    for (const name of ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_API_KEY'])
      expect(header).toContain(name);
    expect(header).not.toMatch(/yet/);
  });

  it("the temporal service's commented mTLS and authorizer settings are variables the shared template reads", () => {
    const template = readFileSync(sharedDeployFiles().template, 'utf8');
    const keys = [
      ...block('temporal').matchAll(/^\s+# ((?:TEMPORAL_TLS|TEMPORAL_AUTH|TEMPORAL_JWT|USE_INTERNAL)\w*): \S/gm),
    ].map((m) => m[1]);
    expect(keys.length).toBeGreaterThanOrEqual(12);
    for (const key of keys) expect({ key, read: template.includes(`env "${key}"`) }).toEqual({ key, read: true });
  });

  it("shows, commented out, the temporal service's mTLS and authorizer settings, and none of them is on", () => {
    for (const key of [
      'TEMPORAL_TLS_FRONTEND_CERT',
      'TEMPORAL_TLS_FRONTEND_KEY',
      'TEMPORAL_TLS_CLIENT1_CA_CERT',
      'TEMPORAL_TLS_CLIENT2_CA_CERT',
      'TEMPORAL_TLS_REQUIRE_CLIENT_AUTH',
      'TEMPORAL_AUTH_AUTHORIZER',
      'TEMPORAL_AUTH_CLAIM_MAPPER',
      'TEMPORAL_JWT_KEY_SOURCE1',
      'USE_INTERNAL_FRONTEND',
    ]) {
      expect({ key, commented: commented('temporal', key) }).toEqual({ key, commented: true });
      expect(env('temporal')[key]).toBeUndefined();
    }
  });

  it("shows the client side for the setup job, the Web UI and the worker (the worker's under the names it reads)", () => {
    for (const key of ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_API_KEY'])
      expect(commented('temporal-setup', key)).toBe(true);
    for (const key of [
      'TEMPORAL_TLS_CA',
      'TEMPORAL_TLS_CERT',
      'TEMPORAL_TLS_KEY',
      'TEMPORAL_AUTH_ENABLED',
      'TEMPORAL_DISABLE_WRITE_ACTIONS',
    ])
      expect(commented('temporal-ui', key)).toBe(true);
    const workerKeys = [...block('worker').matchAll(/^\s+# (TEMPORAL_\w+): \S/gm)].map((m) => m[1]);
    expect(workerKeys).toEqual(
      expect.arrayContaining(['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_API_KEY']),
    );
    // Every one is a variable the worker reads (server/temporal-connection.ts): none is decoration.
    for (const key of workerKeys) expect(TEMPORAL_CONNECTION_VARIABLES).toContain(key);
    expect(block('worker')).not.toMatch(/NOT READ YET/);
  });
});

// ---------------------------------------------------------------------------------------
type SeccompRule = {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: unknown[];
  comment?: string;
  includes?: { caps?: string[]; arches?: string[]; minKernel?: string };
  excludes?: { caps?: string[]; arches?: string[] };
};
type SeccompProfile = { defaultAction: string; defaultErrnoRet?: number; archMap?: unknown[]; syscalls: SeccompRule[] };

describe("deploy/seccomp-bwrap.json (the worker's seccomp profile)", () => {
  const file = join(ROOT, SECCOMP_PROFILE);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as SeccompProfile;
  const ours = profile.syscalls.filter((r) => r.comment?.startsWith('Loopwright:'));
  const docker = profile.syscalls.filter((r) => !ours.includes(r));
  /** Allowed by `rules` to the worker (Docker's default capabilities: no CAP_SYS_ADMIN) on every arch, whatever the arguments. */
  const allows = (rules: SeccompRule[], name: string) =>
    rules.some(
      (r) =>
        r.names.includes(name) &&
        r.action === 'SCMP_ACT_ALLOW' &&
        !r.args?.length &&
        !r.includes?.caps?.length &&
        !r.includes?.arches?.length,
    );
  const allowedOutright = (name: string) => allows(profile.syscalls, name);

  it("is valid JSON and keeps Docker's default action: every syscall not listed fails with EPERM", () => {
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(profile.defaultErrnoRet).toBe(1);
    expect(profile.archMap?.length).toBeGreaterThan(0);
  });

  it("is Docker's default profile (moby/profiles seccomp v0.2.3) unchanged plus one Loopwright rule", () => {
    expect(ours).toHaveLength(1);
    // sha256 of JSON.stringify(JSON.parse(default.json)) at moby/moby b985e231 (vendor/github.com/moby/profiles/seccomp).
    const upstream = { ...profile, syscalls: docker };
    expect(createHash('sha256').update(JSON.stringify(upstream)).digest('hex')).toBe(
      'afb4934b023cfceaaec1a9d752ca3f801aaa96eb2e59abe6e7ea16976948e080',
    );
    expect(profile.syscalls[profile.syscalls.length - 1]).toBe(ours[0]);
  });

  it("allows the namespace and mount syscalls bubblewrap needs without CAP_SYS_ADMIN, which Docker's default refuses", () => {
    const needed = ['clone', 'unshare', 'mount', 'umount2', 'pivot_root', 'sethostname'];
    for (const name of needed) expect({ name, allowed: allowedOutright(name) }).toEqual({ name, allowed: true });
    for (const name of needed) expect({ name, byDocker: allows(docker, name) }).toEqual({ name, byDocker: false });
    const [rule] = mustTake(ours, 1, 'seccomp.json has a Loopwright rule');
    expect([...rule.names].sort()).toEqual([...needed].sort());
    expect(rule).toMatchObject({ action: 'SCMP_ACT_ALLOW' });
    expect(rule.includes).toBeUndefined();
    expect(rule.args).toBeUndefined();
  });

  it("keeps the rest of Docker's refusals: clone3 answers ENOSYS, keyring, bpf, modules, kexec and setns stay refused", () => {
    expect(profile.syscalls.find((r) => r.names.includes('clone3') && r.action === 'SCMP_ACT_ERRNO')).toMatchObject({
      errnoRet: 38,
    });
    for (const name of [
      'clone3',
      'keyctl',
      'add_key',
      'bpf',
      'init_module',
      'finit_module',
      'kexec_load',
      'setns',
      'open_by_handle_at',
    ]) {
      expect({ name, allowed: allowedOutright(name) }).toEqual({ name, allowed: false });
    }
  });
});

// ---------------------------------------------------------------------------------------
type Instruction = { op: string; args: string };

/** Dockerfile instructions, continuation lines joined, split into stages at each FROM. */
function dockerfileStages(): { from: string; name?: string; instructions: Instruction[] }[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\r?\n/g, ' ');
  const args: Record<string, string> = {};
  const stages: { from: string; name?: string; instructions: Instruction[] }[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    const op = must(m[1], 'the pattern requires an instruction').toUpperCase();
    const rest = must(m[2], 'the pattern requires arguments').trim();
    if (op === 'ARG' && stages.length === 0) {
      const [k, v] = rest.split('=');
      if (k !== undefined) args[k] = v ?? '';
    } else if (op === 'FROM') {
      const [image, , name] = rest.split(/\s+/);
      const from = (image ?? '').replace(/\$\{?(\w+)\}?/g, (_s, k: string) => args[k] ?? '');
      stages.push({ from, name, instructions: [] });
    } else if (stages.length > 0) {
      stages.at(-1)?.instructions.push({ op, args: rest }); // stages is not empty here
    }
  }
  return stages;
}

describe('Dockerfile', () => {
  const stages = dockerfileStages();
  const runs = (i: Instruction[]) => i.filter((x) => x.op === 'RUN').map((x) => x.args);
  const build = must(stages[0], 'the Dockerfile has a stage');
  const runtime = must(stages.at(-1), 'the Dockerfile has a stage');

  it('is multi-stage and every stage is based on node:20-bookworm-slim', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.from).toBe('node:20-bookworm-slim');
  });

  it('build stage installs with npm ci, copies the sources and runs npm run build', () => {
    expect(runs(build.instructions).some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs(build.instructions).some((r) => /\bnpm run build\b/.test(r))).toBe(true);
    const order = build.instructions.map((i) => `${i.op} ${i.args}`);
    const copySources = order.findIndex((i) => /^COPY \. \.?/.test(i) || /^COPY .*\bworkers\b/.test(i));
    const buildStep = order.findIndex((i) => /npm run build/.test(i));
    expect(copySources).toBeGreaterThanOrEqual(0);
    expect(copySources).toBeLessThan(buildStep);
  });

  it('runtime stage has production dependencies only and dist/ copied from the build stage', () => {
    expect(runs(runtime.instructions).some((r) => /npm ci\b.*--omit=dev\b.*--ignore-scripts\b/.test(r))).toBe(true);
    expect(runs(runtime.instructions).some((r) => /npm run build/.test(r))).toBe(false);
    const copyDist = runtime.instructions.find((i) => i.op === 'COPY' && /--from=/.test(i.args));
    expect(copyDist?.args).toMatch(new RegExp(`--from=${build.name ?? 0}\\s+\\S*dist\\S*\\s+\\S*dist`));
  });

  it('runtime stage installs bubblewrap (the agent sandbox) with apt-get', () => {
    expect(runs(runtime.instructions).some((r) => /\bapt-get install\b[^&|;]*\sbubblewrap\b/.test(r))).toBe(true);
    expect(runs(build.instructions).some((r) => /\bbubblewrap\b/.test(r))).toBe(false);
  });

  it('runtime stage runs as a non-root user and its CMD is node dist/workers/main.js', () => {
    const user = runtime.instructions.filter((i) => i.op === 'USER').pop();
    expect(user?.args).toBeDefined();
    expect(user!.args).not.toMatch(/^(root|0)(:|$)/);
    const cmd = runtime.instructions.filter((i) => i.op === 'CMD').pop();
    expect(JSON.parse(cmd!.args)).toEqual(['node', 'dist/workers/main.js']);
  });

  it('dist/workers/main.js is where the build (tsconfig.build.json) puts workers/main.ts', () => {
    const file = join(ROOT, 'tsconfig.build.json');
    const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
    expect(error).toBeUndefined();
    expect(config.include).toContain('workers');
    const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, file);
    expect(resolve(parsed.options.rootDir!)).toBe(ROOT);
    expect(resolve(parsed.options.outDir!)).toBe(join(ROOT, 'dist'));
  });
});

describe('.dockerignore', () => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('keeps node_modules, dist, .loopwright and .git out of the build context', () => {
    for (const p of ['node_modules', 'dist', '.loopwright', '.git']) {
      expect(patterns.map((x) => x.replace(/^\/|\/$/g, ''))).toContain(p);
    }
  });

  it('does not exclude anything the build needs', () => {
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'common',
      'workers',
      'workflows',
    ];
    for (const p of patterns) expect(needed).not.toContain(p.replace(/^\/|\/$/g, ''));
  });
});

// ---------------------------------------------------------------------------------------
const composeCli = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;

describe('docker compose client', () => {
  (composeCli ? it : it.skip)(
    '`docker compose config -q` accepts docker-compose.yml (skipped without a compose client)',
    () => {
      const r = spawnSync('docker', ['compose', '-f', COMPOSE_FILE, 'config', '-q'], { encoding: 'utf8', cwd: ROOT });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
    },
  );
});
