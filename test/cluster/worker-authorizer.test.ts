import { serverSecurityEnv } from '../../server/cluster/temporal-config';
import { runCli, startWorkerProcess } from '../helpers/cli';
import { actAsWorker, startJwtIssuer, type JwtIssuer } from '../helpers/jwt';
import { securedCluster } from '../helpers/secured-cluster';
import { workerProcessEnv } from '../helpers/temporal';

/**
 * A cluster behind the Loopwright authorizer (TEMPORAL_AUTH_AUTHORIZER=loopwright: the server built
 * from deploy/temporal-server/), as an attacker who holds what a person who may start runs and send
 * decisions holds: a JWT with `default:write`. Under Temporal's default authorizer that token also
 * polls the deployment's task queues and completes its activities (the control in
 * test/cluster/api-key.test.ts); here every worker call is refused with PermissionDenied, while a
 * `loopwright worker` holding `default:worker` too runs a loop the CLI (write token) starts and reads.
 * LOOPWRIGHT_TEST_AUTHORIZER=default runs this file against Temporal's default authorizer, where it fails.
 */
let jwt: JwtIssuer;
const AUTHORIZER = process.env.LOOPWRIGHT_TEST_AUTHORIZER ?? 'loopwright';

const cluster = securedCluster(
  'worker-auth',
  'from a worker',
  async () => {
    jwt = await startJwtIssuer();
    return {
      env: { ...process.env, TEMPORAL_API_KEY: jwt.token(['system:admin', 'default:admin']), TEMPORAL_TLS: 'false' },
      serverEnv: serverSecurityEnv({
        TEMPORAL_AUTH_AUTHORIZER: AUTHORIZER,
        TEMPORAL_AUTH_CLAIM_MAPPER: 'default',
        TEMPORAL_JWT_KEY_SOURCE1: jwt.keySource,
      }),
    };
  },
  () => jwt?.close(),
);

const INPUT = JSON.stringify({ task: 'Answer.', rubric: ['answers'], maxAttempts: 1 });

test('a default:write token cannot act as a worker; a worker with default:worker runs a loop the CLI starts and reads', async () => {
  const address = cluster.state.addresses[0]!;
  const write = jwt.token(['default:write']);
  const base = workerProcessEnv('worker-auth', cluster.model.url);
  const queue = base.LOOPWRIGHT_TASK_QUEUE!;
  const env = { ...base, TEMPORAL_ADDRESS: address, TEMPORAL_TLS: 'false' };
  await startWorkerProcess({ ...env, TEMPORAL_API_KEY: jwt.token(['default:write', 'default:worker']) });
  const cli = { ...env, TEMPORAL_API_KEY: write };

  // The attacker starts a run (write may) and, while it is in flight, polls the deployment's
  // workflow and activity task queues and completes an activity of the run by id.
  const started = runCli(
    ['run', 'evaluate-optimize', '--input', INPUT, '--id', 'attacked-run', '--wait'],
    cli,
    120_000,
  );
  const attack = await actAsWorker(address, write, 'default', queue, 'attacked-run');
  const run = await started;
  expect(run.stderr).not.toMatch(/^error:/m);
  expect(run.code).toBe(0);
  expect(run.stdout).toMatch(/state\s+completed \(passed\)/);
  expect(attack).toEqual({
    workflowPoll: 'PERMISSION_DENIED',
    activityPoll: 'PERMISSION_DENIED',
    completeActivity: 'PERMISSION_DENIED',
  });

  // The CLI with the write token reads the result.
  const status = await runCli(['status', 'attacked-run'], cli);
  expect(status.code).toBe(0);
  expect(status.stdout).toMatch(/completed \(passed\)/);
}, 240_000);
