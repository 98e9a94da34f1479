import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { readState } from '../../server/cluster/processes';
import { must } from '../../common/must';

/**
 * The one Temporal config template (deploy/temporal/config/loopwright.yaml), rendered by the
 * cluster's own temporal-server with the variables a docker-compose container would set, has the
 * persistence docker-compose.yml's temporal service runs with: PostgreSQL (postgres12) at the
 * postgresql service, its user and password, databases temporal and temporal_visibility, and
 * auto-setup's 4 history shards (a different count would make the server refuse the database).
 */
const ROOT = path.join(__dirname, '..', '..');
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, { environment: Record<string, string> }>;
};
const composeDefault = (value: string) => value.replace(/\$\{\w+:-([^}]*)\}/g, '$1');

type SqlStore = {
  sql: { pluginName: string; databaseName: string; connectAddr: string; user: string; password: string };
};

test("rendered as compose would, the template has the persistence of docker-compose.yml's temporal service", () => {
  const state = readState(process.env.LOOPWRIGHT_CLUSTER_DIR ?? '');
  const server = state?.processes.find((p) => p.name === 'history')?.command;
  expect(server).toBeDefined();
  const temporalEnv = must(compose.services.temporal, 'docker-compose.yml has a temporal service').environment;
  const env = {
    PATH: process.env.PATH,
    TEMPORAL_DB_HOST: temporalEnv.POSTGRES_SEEDS,
    TEMPORAL_DB_PORT: temporalEnv.DB_PORT,
    TEMPORAL_DB_USER: temporalEnv.POSTGRES_USER,
    TEMPORAL_DB_PASSWORD: composeDefault(temporalEnv.POSTGRES_PWD ?? ''),
  };
  const rendered = spawnSync(
    server!,
    ['--config', path.join(ROOT, 'deploy', 'temporal', 'config'), '--env', 'loopwright', 'render-config'],
    { env, encoding: 'utf8' },
  );
  expect(rendered.status).toBe(0);
  const config = parse(rendered.stdout) as {
    persistence: {
      numHistoryShards: number;
      defaultStore: string;
      visibilityStore: string;
      datastores: Record<string, SqlStore>;
    };
  };
  const { persistence } = config;
  expect(persistence.numHistoryShards).toBe(4);
  const stores = [
    persistence.datastores[persistence.defaultStore]?.sql,
    persistence.datastores[persistence.visibilityStore]?.sql,
  ];
  expect(stores.map((s) => s?.databaseName)).toEqual(['temporal', 'temporal_visibility']);
  for (const store of stores) {
    // render-config masks the password; the user and address are what compose gives auto-setup.
    expect(store).toMatchObject({
      pluginName: temporalEnv.DB,
      connectAddr: `postgresql:${temporalEnv.DB_PORT}`,
      user: temporalEnv.POSTGRES_USER,
    });
  }
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
