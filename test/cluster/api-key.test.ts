import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serverSecurityEnv } from '../../server/cluster/temporal-config';
import { runCli, startWorkerProcess } from '../helpers/cli';
import { securedCluster } from '../helpers/secured-cluster';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * A third cluster, its frontend behind Temporal's default authorizer and JWT claim mapper (the
 * template's TEMPORAL_AUTH_AUTHORIZER, TEMPORAL_AUTH_CLAIM_MAPPER, TEMPORAL_JWT_KEY_SOURCE1), the
 * signing keys served here as a JWKS. A Loopwright worker and the CLI given only TEMPORAL_API_KEY
 * (a JWT whose permissions claim grants the namespace; TEMPORAL_TLS=false: this frontend has no
 * TLS) run a loop to completion; the CLI without a key, or with a key signed by another key, is refused.
 */
let jwks: Server;
let signing: KeyObject;
let other: KeyObject;

const b64url = (v: Buffer | string) => Buffer.from(v).toString('base64url');

/** An RS256 JWT for `permissions`, signed with `key` under key id `kid`. */
function token(permissions: string[], key: KeyObject, kid = 'loopwright-test'): string {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
  const now = Math.floor(Date.now() / 1000);
  const body = b64url(JSON.stringify({ sub: 'loopwright-test', permissions, iat: now, exp: now + 3600 }));
  return `${head}.${body}.${b64url(sign('sha256', Buffer.from(`${head}.${body}`), key))}`;
}

const cluster = securedCluster(
  'auth',
  'with a key',
  async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    signing = pair.privateKey;
    other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid: 'loopwright-test', alg: 'RS256', use: 'sig' };
    jwks = createServer((_req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const admin = token(['system:admin', 'default:admin'], signing);
    return {
      // The cluster's Temporal CLI (health checks, deploy/temporal-setup.sh) uses the admin token.
      env: { ...process.env, TEMPORAL_API_KEY: admin, TEMPORAL_TLS: 'false' },
      // What `npm run cluster` passes from its environment (serverSecurityEnv); it adds an internal frontend.
      serverEnv: serverSecurityEnv({
        TEMPORAL_AUTH_AUTHORIZER: 'default',
        TEMPORAL_AUTH_CLAIM_MAPPER: 'default',
        TEMPORAL_JWT_KEY_SOURCE1: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
      }),
    };
  },
  () => new Promise((resolve) => (jwks ? jwks.close(() => resolve()) : resolve())),
);

const INPUT = JSON.stringify({ task: 'Answer.', rubric: ['answers'], maxAttempts: 1 });

test('a worker and the CLI reach a frontend with an authorizer with only TEMPORAL_API_KEY: a run completes', async () => {
  const env = {
    ...workerProcessEnv('api-key', cluster.model.url),
    TEMPORAL_ADDRESS: cluster.state.addresses[0],
    TEMPORAL_API_KEY: token(['default:write'], signing),
    TEMPORAL_TLS: 'false',
  };
  // With an authorizer the cluster runs an internal frontend for Temporal's own worker.
  expect(cluster.state.processes.map((p) => p.name)).toContain('internal-frontend');
  const worker = await startWorkerProcess(env);
  expect(worker.output()).toMatch(/\(namespace default, API key\)/);
  const run = await runCli(['run', 'evaluate-optimize', '--input', INPUT, '--id', 'key-run', '--wait'], env, 120_000);
  expect(run.stderr).not.toMatch(/^error:/m);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/state\s+completed \(passed\)/);
}, 180_000);

test('the CLI without a key, or with a key signed by someone else, is refused with one error line, exit 2', async () => {
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: cluster.state.addresses[0] };
  const cases: Array<[Record<string, string>, RegExp]> = [
    // No key: the server answers, and refuses the call.
    [{}, /^error: .*(unauthori[sz]ed|permission)/i],
    // A key it cannot verify: refused when connecting, and the message names the settings to check.
    [
      { TEMPORAL_API_KEY: token(['default:write'], other), TEMPORAL_TLS: 'false' },
      /^error: cannot connect to the Temporal server at .* with the TLS or API-key settings given/,
    ],
  ];
  for (const [extra, message] of cases) {
    const r = await runCli(['list'], { ...base, ...extra });
    expect({ extra: Object.keys(extra), code: r.code }).toEqual({ extra: Object.keys(extra), code: 2 });
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(message)]);
  }
}, 120_000);
