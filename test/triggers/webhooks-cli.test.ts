import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoopwrightClient } from '../../client/loopwright-client';
import { CLI, runCli, startCli, type Background } from '../helpers/cli';
import { clientEnv, testAddress, uniqueQueue } from '../helpers/temporal';
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
  /** Each test's own LOOPWRIGHT_HOME, where the receiver keeps its replay memory. */
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'webhook-cli-'));
  });
  afterEach(async () => {
    await proc?.stop('SIGKILL');
    proc = undefined;
    rmSync(home, { recursive: true, force: true });
  });
  const env = (extra: Record<string, string>) => ({
    ...NO_SERVER,
    TEMPORAL_ADDRESS: testAddress(),
    LOOPWRIGHT_TASK_QUEUE: uniqueQueue('webhook-cli'),
    LOOPWRIGHT_HOME: home,
    ...extra,
  });
  /** Starts the receiver and resolves with its URL once it listens. */
  const listening = async (e: Record<string, string | undefined>): Promise<string> => {
    proc = startCli(['webhooks', '--port', '0'], e);
    return /http:\/\/127\.0\.0\.1:\d+/.exec(await proc.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+ /))![0];
  };

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

  test('a signed forced delivery it accepted is refused after the process is killed and started again on the same home, under a new delivery id (409 replayed body) and under its own (409 replayed delivery), and no run starts', async () => {
    const temporal = await LoopwrightClient.connect({ env: clientEnv({}) });
    try {
      const e = env({ LOOPWRIGHT_WEBHOOK_SECRET: SECRET });
      const key = `cli/${randomBytes(4).toString('hex')}`;
      const raw = JSON.stringify({ key, input: { task: 'Say hi.', rubric: ['says hi'] }, force: true });
      const id = randomUUID();
      const workflowId = `evaluate-optimize/${key}`;
      let url = await listening(e);
      const file = join(home, 'webhooks', 'seen.jsonl');
      expect(proc!.output()).toContain(`accepted deliveries are remembered in ${file} (0 from the last 24 hours)`);
      expect(
        await deliver(`${url}/events/evaluate-optimize`, { body: raw, headers: { 'x-github-delivery': id } }),
      ).toEqual({
        status: 201,
        body: { workflowId, duplicate: false },
      });
      // Closed, so a replay of the forced body would start the key again.
      const handle = temporal.temporal.workflow.getHandle(workflowId);
      const { runId } = await handle.describe();
      await handle.terminate('closed for the test');
      await proc!.stop('SIGKILL');
      // A crash in the middle of an append leaves a torn last line.
      appendFileSync(file, '{"at":"2026-12-04T20:');

      url = await listening(e);
      expect(proc!.output()).toContain(`accepted deliveries are remembered in ${file} (1 from the last 24 hours)`);
      const newId = await deliver(`${url}/events/evaluate-optimize`, { body: raw });
      expect(newId.status).toBe(409);
      expect(newId.body.error).toMatch(
        /^replayed body: this exact signed body was accepted for loop evaluate-optimize within the last 24 hours; a forced rerun needs a delivery of its own/,
      );
      expect(
        await deliver(`${url}/events/evaluate-optimize`, { body: raw, headers: { 'x-github-delivery': id } }),
      ).toEqual({
        status: 409,
        body: { error: `replayed delivery ${id}: a delivery with this id was accepted within the last 24 hours` },
      });
      const latest = await handle.describe();
      expect([latest.runId, latest.status.name]).toEqual([runId, 'TERMINATED']);
      // The file holds the body's SHA-256, never the body; mode 0600; the torn line is gone.
      const text = readFileSync(file, 'utf8');
      expect(text).toContain(createHash('sha256').update(raw).digest('hex'));
      expect(text).not.toContain(key);
      expect(
        text
          .trimEnd()
          .split('\n')
          .map((l) => Object.keys(JSON.parse(l) as object).sort()),
      ).toEqual([['at', 'body', 'delivery', 'loop']]);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // A new body is a delivery of its own: the receiver still starts runs.
      const fresh = { key: `cli/${randomBytes(4).toString('hex')}`, input: { task: 'Say hi.', rubric: ['says hi'] } };
      expect((await deliver(`${url}/events/evaluate-optimize`, { body: fresh })).status).toBe(201);
      await temporal.temporal.workflow.getHandle(`evaluate-optimize/${fresh.key}`).terminate('closed for the test');
      expect(await proc!.stop('SIGINT')).toBe(0);
    } finally {
      await temporal.close();
    }
  });

  test('a replay memory it cannot read stops it before it listens: exit 2, one line naming the file and what to do', async () => {
    const file = join(home, 'webhooks', 'seen.jsonl');
    mkdirSync(file, { recursive: true });
    const res = await runCli(['webhooks', '--port', '0'], {
      ...NO_SERVER,
      LOOPWRIGHT_HOME: home,
      LOOPWRIGHT_WEBHOOK_SECRET: SECRET,
    });
    expect(res.code).toBe(2);
    expect(res.stderr.trimEnd().split('\n')).toEqual([
      `error: cannot read the webhook replay memory ${file} (EISDIR): make it a file this user can read and write (mode 0600), or set LOOPWRIGHT_HOME to a folder it owns`,
    ]);
    expect(res.stdout).toBe('');
  });
});
