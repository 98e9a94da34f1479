import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { CLI, runCli, startCli, type Background } from '../helpers/cli';
import { testAddress, uniqueQueue } from '../helpers/temporal';
import { deliver, SECRET } from './webhook-requests';

/**
 * `loopwright webhooks` as a user runs it: the built CLI (commander is ESM-only, so jest cannot
 * load client/cli.ts itself; `npm run build` or `npx tsc -p tsconfig.build.json` first), whose
 * `main` gets exactly the environment given here.
 */
beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build the CLI first (npm run build)`);
});

// Port 1 refuses connections: a command that tried to reach Temporal would fail differently.
const NO_SERVER = { TEMPORAL_ADDRESS: '127.0.0.1:1', PATH: process.env.PATH, HOME: process.env.HOME };

describe('loopwright webhooks without a secret', () => {
  test.each([
    ['unset', NO_SERVER],
    ['empty', { ...NO_SERVER, LOOPWRIGHT_WEBHOOK_SECRET: '' }],
  ])(
    'with LOOPWRIGHT_WEBHOOK_SECRET %s and no --insecure it refuses to start: exit 2, one line naming the variable and --insecure',
    async (_name, env) => {
      const res = await runCli(['webhooks', '--port', '0'], env);
      expect(res.code).toBe(2);
      expect(res.stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(
          /^error: LOOPWRIGHT_WEBHOOK_SECRET is not set: .* or pass --insecure to accept unsigned deliveries/,
        ),
      ]);
      expect(res.stdout).toBe('');
    },
  );

  test('its help says that signatures are verified and no longer says there is no authentication', async () => {
    const res = await runCli(['webhooks', '--help'], NO_SERVER);
    expect(res.code).toBe(0);
    const help = (res.stdout + res.stderr).replace(/\s+/g, ' ');
    expect(help).not.toMatch(/no authentication/);
    expect(help).toMatch(/X-Hub-Signature-256/);
    expect(help).toMatch(/--host <host> interface to bind \(every delivery's signature is verified/);
    expect(help).toMatch(/--insecure without LOOPWRIGHT_WEBHOOK_SECRET: accept unsigned deliveries/);
  });
});

describe('the `loopwright webhooks` process', () => {
  let proc: Background | undefined;
  afterEach(async () => {
    await proc?.stop('SIGKILL');
    proc = undefined;
  });
  const env = (extra: Record<string, string>) => ({
    ...NO_SERVER,
    TEMPORAL_ADDRESS: testAddress(),
    LOOPWRIGHT_TASK_QUEUE: uniqueQueue('webhook-cli'),
    ...extra,
  });

  test('with LOOPWRIGHT_WEBHOOK_SECRET it refuses an unsigned delivery (401), starts a signed one (201) and stops on Ctrl-C with exit 0', async () => {
    proc = startCli(['webhooks', '--port', '0'], env({ LOOPWRIGHT_WEBHOOK_SECRET: SECRET }));
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(
      await proc.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+ .*signed/),
    )![0];
    const key = `cli/${randomBytes(4).toString('hex')}`;
    const body = { key, input: { task: 'Say hi.', rubric: ['says hi'] } };
    expect((await deliver(`${url}/events/evaluate-optimize`, { body, secret: false })).status).toBe(401);
    expect(await deliver(`${url}/events/evaluate-optimize`, { body })).toEqual({
      status: 201,
      body: { workflowId: `evaluate-optimize/${key}`, duplicate: false },
    });
    expect(proc.output()).not.toMatch(/WARNING/);
    expect(await proc.stop('SIGINT')).toBe(0);
    expect(proc.output()).toMatch(/webhooks: stopped\./);
  });

  test('with --insecure and no secret it starts and prints a loud warning that deliveries are not authenticated', async () => {
    proc = startCli(['webhooks', '--port', '0', '--insecure'], env({}));
    await proc.waitFor(/listening on .*unsigned/);
    expect(proc.output()).toMatch(
      /^WARNING: --insecure: deliveries are NOT authenticated: any program that can reach http:\/\/127\.0\.0\.1:\d+ can start runs; set LOOPWRIGHT_WEBHOOK_SECRET instead$/m,
    );
    expect(await proc.stop('SIGINT')).toBe(0);
  });
});
