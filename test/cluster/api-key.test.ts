import { Client, Connection } from '@temporalio/client';
import { serverSecurityEnv } from '../../server/cluster/temporal-config';
import { runCli, startWorkerProcess } from '../helpers/cli';
import { actAsWorker, startJwtIssuer, type JwtIssuer } from '../helpers/jwt';
import { securedCluster } from '../helpers/secured-cluster';
import { uniqueQueue, workerProcessEnv } from '../helpers/temporal';

/**
 * A third cluster, its frontend behind Temporal's default authorizer and JWT claim mapper (the
 * template's TEMPORAL_AUTH_AUTHORIZER, TEMPORAL_AUTH_CLAIM_MAPPER, TEMPORAL_JWT_KEY_SOURCE1), the
 * signing keys served here as a JWKS. A Loopwright worker and the CLI given only TEMPORAL_API_KEY
 * (a JWT whose permissions claim grants the namespace; TEMPORAL_TLS=false: this frontend has no
 * TLS) run a loop to completion; the CLI without a key, or with a key signed by another key, is
 * refused. And the hole test/cluster/worker-authorizer.test.ts closes: here a `default:write` token
 * acts as a worker.
 */
let jwt: JwtIssuer;

const cluster = securedCluster(
  'auth',
  'with a key',
  async () => {
    jwt = await startJwtIssuer();
    const admin = jwt.token(['system:admin', 'default:admin']);
    return {
      // The cluster's Temporal CLI (health checks, deploy/temporal-setup.sh) uses the admin token.
      env: { ...process.env, TEMPORAL_API_KEY: admin, TEMPORAL_TLS: 'false' },
      // What `npm run cluster` passes from its environment (serverSecurityEnv); it adds an internal frontend.
      serverEnv: serverSecurityEnv({
        TEMPORAL_AUTH_AUTHORIZER: 'default',
        TEMPORAL_AUTH_CLAIM_MAPPER: 'default',
        TEMPORAL_JWT_KEY_SOURCE1: jwt.keySource,
      }),
    };
  },
  () => jwt?.close(),
);

const INPUT = JSON.stringify({ task: 'Answer.', rubric: ['answers'], maxAttempts: 1 });

test('a worker and the CLI reach a frontend with an authorizer with only TEMPORAL_API_KEY: a run completes', async () => {
  const env = {
    ...workerProcessEnv('api-key', cluster.model.url),
    TEMPORAL_ADDRESS: cluster.state.addresses[0],
    TEMPORAL_API_KEY: jwt.token(['default:write']),
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
      { TEMPORAL_API_KEY: jwt.foreignToken(['default:write']), TEMPORAL_TLS: 'false' },
      /^error: cannot connect to the Temporal server at .* with the TLS or API-key settings given/,
    ],
  ];
  for (const [extra, message] of cases) {
    const r = await runCli(['list'], { ...base, ...extra });
    expect({ extra: Object.keys(extra), code: r.code }).toEqual({ extra: Object.keys(extra), code: 2 });
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(message)]);
  }
}, 120_000);

test("the control: under the default authorizer a default:write token polls a task queue and takes a run's workflow task", async () => {
  const address = cluster.state.addresses[0]!;
  const write = jwt.token(['default:write']);
  const queue = uniqueQueue('auth-attacker');
  const client = new Client({ connection: await Connection.connect({ address, apiKey: write, tls: false }) });
  try {
    // A run on a queue no worker polls: the attacker's poll gets its first workflow task.
    const handle = await client.workflow.start('evaluateOptimizeWorkflow', {
      taskQueue: queue,
      workflowId: `taken-${queue}`,
      args: [],
    });
    try {
      const attack = await actAsWorker(address, write, 'default', queue, handle.workflowId);
      expect(attack).toEqual({
        workflowPoll: 'accepted',
        activityPoll: 'accepted',
        completeActivity: expect.not.stringMatching(/PERMISSION_DENIED/),
        gotTaskOf: handle.workflowId,
      });
    } finally {
      await handle.terminate('test over');
    }
  } finally {
    await client.connection.close();
  }
}, 60_000);
