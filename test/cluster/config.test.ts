import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { EncryptionCodec } from '../../crypto/codec';
import { keyRingFromEnv } from '../../crypto/keyring';
import { readState } from '../../server/cluster/processes';
import { must } from '../../common/must';

/**
 * The one Temporal config template (deploy/temporal/config/loopwright.yaml), rendered by the
 * cluster's own temporal-server with the environment docker-compose.yml gives its temporal
 * service (no Docker here: the same binary and file, compose's variables): PostgreSQL (postgres12)
 * at the postgresql service, its user, databases temporal and temporal_visibility, 4 history
 * shards; and, with compose's commented mTLS and authorizer settings switched on, the server's TLS
 * and authorization sections carry them. Plain local use (nothing set) renders no TLS at all.
 */
const ROOT = path.join(__dirname, '..', '..');
const composeText = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText) as {
  services: Record<string, { environment: Record<string, string> }>;
};
const composeDefault = (value: string) => value.replace(/\$\{\w+:-([^}]*)\}/g, '$1');
const temporalEnv = Object.fromEntries(
  Object.entries(must(compose.services.temporal, 'docker-compose.yml has a temporal service').environment).map(
    ([k, v]) => [k, composeDefault(String(v))],
  ),
);
/** The temporal service's commented-out settings (`# NAME: value`), as compose would pass them uncommented. */
function commentedSettings(): Record<string, string> {
  const lines = composeText.split('\n');
  const start = lines.indexOf('  temporal:');
  const end = lines.findIndex((l, i) => i > start && /^ {2}\S/.test(l));
  const out: Record<string, string> = {};
  for (const line of lines.slice(start, end)) {
    const m = /^\s+# ((?:TEMPORAL|USE)_\w+): "?([^"\s]+)"?/.exec(line);
    if (m?.[1] && m[2]) out[m[1]] = m[2];
  }
  return out;
}

type SqlStore = {
  sql: { pluginName: string; databaseName: string; connectAddr: string; user: string; password: string };
};
type Rendered = {
  persistence: {
    numHistoryShards: number;
    defaultStore: string;
    visibilityStore: string;
    datastores: Record<string, SqlStore>;
  };
  global: {
    tls: Record<'frontend' | 'internode', { server: Record<string, unknown>; client: Record<string, unknown> }>;
    authorization: { authorizer: string; claimMapper: string; jwtKeyProvider: { keySourceURIs: string[] } };
  };
  services: Record<string, unknown>;
};

function render(env: Record<string, string>): Rendered {
  const state = readState(process.env.LOOPWRIGHT_CLUSTER_DIR ?? '');
  const server = state?.processes.find((p) => p.name === 'history')?.command;
  expect(server).toBeDefined();
  const rendered = spawnSync(
    server!,
    ['--config', path.join(ROOT, 'deploy', 'temporal', 'config'), '--env', 'loopwright', 'render-config'],
    { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' },
  );
  expect(rendered.stderr).not.toMatch(/error/i);
  expect(rendered.status).toBe(0);
  return parse(rendered.stdout) as Rendered;
}

test("rendered with docker-compose.yml's temporal environment, the template has compose's PostgreSQL persistence", () => {
  const { persistence, global } = render(temporalEnv);
  expect(persistence.numHistoryShards).toBe(4);
  const stores = [
    persistence.datastores[persistence.defaultStore]?.sql,
    persistence.datastores[persistence.visibilityStore]?.sql,
  ];
  expect(stores.map((s) => s?.databaseName)).toEqual(['temporal', 'temporal_visibility']);
  for (const store of stores) {
    // render-config masks the password; the user and address are compose's.
    expect(store).toMatchObject({
      pluginName: 'postgres12',
      connectAddr: `postgresql:${temporalEnv.TEMPORAL_DB_PORT}`,
      user: must(compose.services.postgresql, 'docker-compose.yml has a postgresql service').environment.POSTGRES_USER,
    });
  }
  // As shipped (and for npm run cluster): no TLS, no authorizer.
  expect(global.tls.frontend.server.certFile).toBe('');
  expect(global.tls.internode.server.certFile).toBe('');
  expect(global.authorization.authorizer).toBe('');
});

test("compose's commented mTLS and authorizer settings, switched on, reach the rendered config", () => {
  const settings = commentedSettings();
  expect(Object.keys(settings).length).toBeGreaterThanOrEqual(12);
  const { global, services } = render({ ...temporalEnv, ...settings });
  expect(global.tls.frontend.server).toMatchObject({
    certFile: settings.TEMPORAL_TLS_FRONTEND_CERT,
    keyFile: settings.TEMPORAL_TLS_FRONTEND_KEY,
    requireClientAuth: true,
    clientCaFiles: [settings.TEMPORAL_TLS_CLIENT1_CA_CERT, settings.TEMPORAL_TLS_CLIENT2_CA_CERT],
  });
  expect(global.tls.frontend.client).toMatchObject({
    serverName: settings.TEMPORAL_TLS_FRONTEND_SERVER_NAME,
    rootCaFiles: [settings.TEMPORAL_TLS_SERVER_CA_CERT],
  });
  expect(global.tls.internode.server).toMatchObject({
    certFile: settings.TEMPORAL_TLS_SERVER_CERT,
    keyFile: settings.TEMPORAL_TLS_SERVER_KEY,
    clientCaFiles: [settings.TEMPORAL_TLS_SERVER_CA_CERT],
  });
  expect(global.authorization).toMatchObject({
    authorizer: settings.TEMPORAL_AUTH_AUTHORIZER,
    claimMapper: settings.TEMPORAL_AUTH_CLAIM_MAPPER,
    jwtKeyProvider: { keySourceURIs: [settings.TEMPORAL_JWT_KEY_SOURCE1] },
  });
  expect(Object.keys(services)).toContain('internal-frontend');
});

test("the cluster's Web UI server answers and reads the cluster's namespaces through its frontend", async () => {
  const url = process.env.LOOPWRIGHT_CLUSTER_UI_URL;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const page = await fetch(`${url}/`);
  expect(page.status).toBe(200);
  const namespaces = (await (await fetch(`${url}/api/v1/namespaces`)).json()) as {
    namespaces: Array<{ namespaceInfo: { name: string } }>;
  };
  expect(namespaces.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
});

test("the cluster's Web UI is pointed at the cluster's codec server, which decodes the suite's encrypted payloads for the UI's origin only", async () => {
  const dir = process.env.LOOPWRIGHT_CLUSTER_DIR ?? '';
  const state = readState(dir)!;
  expect(state.codecUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(state.processes.map((p) => p.name)).toContain('codec');
  // What the UI server reads: its codec endpoint is the cluster's codec server.
  const uiConfig = parse(readFileSync(path.join(dir, 'ui', 'loopwright.yaml'), 'utf8')) as {
    codec?: { endpoint?: string };
  };
  expect(uiConfig.codec?.endpoint).toBe(state.codecUrl);
  // And the UI server hands it to the browser (its settings API).
  const settings = (await (await fetch(`${state.uiUrl}/api/v1/settings`)).json()) as { Codec?: { Endpoint?: string } };
  expect(settings.Codec?.Endpoint).toBe(state.codecUrl);

  // A payload encrypted with the ring every client and worker of the suite uses decodes there.
  const codec = new EncryptionCodec(keyRingFromEnv(process.env)!);
  const plain = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"task":"cluster codec"}') };
  const [encrypted] = await codec.encode([plain]);
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
  const body = JSON.stringify({
    payloads: [
      {
        metadata: Object.fromEntries(Object.entries(encrypted!.metadata!).map(([k, v]) => [k, b64(v)])),
        data: b64(encrypted!.data!),
      },
    ],
  });
  const decode = (origin: string) =>
    fetch(`${state.codecUrl}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', Origin: origin },
      body,
    });
  const ok = await decode(state.uiUrl!);
  expect(ok.status).toBe(200);
  expect(ok.headers.get('access-control-allow-origin')).toBe(state.uiUrl);
  const decoded = (await ok.json()) as { payloads: Array<{ data: string }> };
  expect(Buffer.from(decoded.payloads[0]!.data, 'base64').toString()).toBe('{"task":"cluster codec"}');
  expect((await decode('http://127.0.0.1:1')).status).toBe(403);
});
