import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { must } from '../../common/must';
import { serverSecurityEnv } from '../../server/cluster/temporal-config';
import { freePort } from '../../server/free-port';
import { runCli, startWorkerProcess } from '../helpers/cli';
import { securedCluster } from '../helpers/secured-cluster';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * A second cluster, its frontend and internode traffic on mTLS (throwaway CA and certificates made
 * with openssl here; TEMPORAL_TLS_REQUIRE_CLIENT_AUTH=true), configured only through the
 * variables the shared template reads. A Loopwright worker, the CLI, the Temporal CLI that checks
 * the frontend and runs deploy/temporal-setup.sh, and the Web UI connect with only the client
 * variables Temporal's own tools use (TEMPORAL_TLS_CLIENT_CERT_PATH, _KEY_PATH,
 * _SERVER_CA_CERT_PATH, _SERVER_NAME); a client without a certificate is refused.
 */
const certs = mkdtempSync(path.join(tmpdir(), 'loopwright-tls-certs-'));
let clientTls: Record<string, string>;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: certs, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A key and a certificate for `name`, signed by the test CA, with the given extensions. */
function issue(name: string, cn: string, ext: string): void {
  writeFileSync(path.join(certs, `${name}.ext`), ext);
  openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  openssl('req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-out',
    `${name}.pem`,
    '-extfile',
    `${name}.ext`,
  );
}

const cluster = securedCluster(
  'tls',
  'over mTLS',
  async () => {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '1',
      '-subj',
      '/CN=loopwright test CA',
    );
    // One certificate for the frontend and for internode traffic (history, matching, internal worker).
    issue(
      'server',
      'temporal',
      'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:temporal\nextendedKeyUsage=serverAuth,clientAuth\n',
    );
    issue('client', 'loopwright-worker', 'extendedKeyUsage=clientAuth\n');
    const file = (name: string) => path.join(certs, name);
    clientTls = {
      TEMPORAL_TLS_CLIENT_CERT_PATH: file('client.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: file('client.key'),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal',
    };
    return {
      uiPort: await freePort(),
      env: { ...process.env, ...clientTls },
      // What `npm run cluster` passes from its environment (serverSecurityEnv): only these names.
      serverEnv: serverSecurityEnv({
        TEMPORAL_TLS_FRONTEND_CERT: file('server.pem'),
        TEMPORAL_TLS_FRONTEND_KEY: file('server.key'),
        TEMPORAL_TLS_CLIENT1_CA_CERT: file('ca.pem'),
        TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true',
        TEMPORAL_TLS_SERVER_CERT: file('server.pem'),
        TEMPORAL_TLS_SERVER_KEY: file('server.key'),
        TEMPORAL_TLS_SERVER_CA_CERT: file('ca.pem'),
        TEMPORAL_TLS_FRONTEND_SERVER_NAME: 'temporal',
        TEMPORAL_TLS_INTERNODE_SERVER_NAME: 'temporal',
        PATH: '/not-passed',
      }),
    };
  },
  () => rmSync(certs, { recursive: true, force: true }),
);

const INPUT = JSON.stringify({ task: 'Answer.', rubric: ['answers'], maxAttempts: 1 });

test('a worker and the CLI reach an mTLS frontend with only the TEMPORAL_TLS_* variables: a run completes', async () => {
  const env = {
    ...workerProcessEnv('tls', cluster.model.url),
    TEMPORAL_ADDRESS: cluster.state.addresses[0],
    ...clientTls,
  };
  const worker = await startWorkerProcess(env);
  expect(worker.output()).toMatch(/worker polling task queue \S+ on 127\.0\.0\.1:\d+ \(namespace default, mTLS\)/);
  const run = await runCli(['run', 'evaluate-optimize', '--input', INPUT, '--id', 'tls-run', '--wait'], env, 120_000);
  expect(run.stderr).not.toMatch(/^error:/m);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/state\s+completed \(passed\)/);
  const status = await runCli(['status', 'tls-run', '--json'], env);
  expect(JSON.parse(status.stdout)).toMatchObject({ state: 'completed', output: 'over mTLS' });
}, 180_000);

test('a client without a certificate is refused: one error line naming the TLS settings, exit 2', async () => {
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: cluster.state.addresses[0] };
  // TLS with the right CA, but no client certificate: the frontend requires one.
  const noCert = await runCli(['list'], {
    ...base,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: clientTls.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
    TEMPORAL_TLS_SERVER_NAME: 'temporal',
  });
  expect(noCert.code).toBe(2);
  expect(noCert.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(/^error: cannot connect to the Temporal server at .* with the TLS or API-key settings given/),
  ]);
  // Plain TCP to a TLS frontend.
  const plain = await runCli(['list'], base);
  expect(plain.code).toBe(2);
  expect(plain.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: cannot reach the Temporal server/)]);
  // The Temporal CLI, too, is refused without a certificate, and let in with one.
  const cli = process.env.LOOPWRIGHT_TEMPORAL_CLI ?? 'temporal';
  const health = (env: Record<string, string | undefined>) => {
    try {
      return execFileSync(
        cli,
        [
          'operator',
          'cluster',
          'health',
          '--address',
          must(cluster.state.addresses[0], 'the TLS cluster has a frontend'),
        ],
        {
          env,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: 30_000,
        },
      );
    } catch {
      return 'refused';
    }
  };
  expect(health({ ...base, TEMPORAL_TLS_SERVER_CA_CERT_PATH: clientTls.TEMPORAL_TLS_SERVER_CA_CERT_PATH })).toBe(
    'refused',
  );
  expect(health({ ...base, ...clientTls })).toContain('SERVING');
}, 120_000);

test("the cluster's Web UI reaches the mTLS frontend with the same client certificate", async () => {
  expect(cluster.state.uiUrl).toBeDefined();
  const namespaces = (await (await fetch(`${cluster.state.uiUrl}/api/v1/namespaces`)).json()) as {
    namespaces: Array<{ namespaceInfo: { name: string } }>;
  };
  expect(namespaces.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
});
