import { randomBytes, randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { WorkflowNotFoundError } from '@temporalio/client';
import { startWebhookServer, type WebhookLimits, type WebhookServer } from '../../client/commands/webhooks';
import type { EventClient } from '../../client/events';
import { LoopwrightClient } from '../../client/loopwright-client';
import { UsageError } from '../../common/errors';
import { clientEnv, uniqueQueue } from '../helpers/temporal';
import { deliver, rawExchange, SECRET, sign, statusOf, type Answer, type Delivery } from './webhook-requests';

/**
 * Who may start runs through `loopwright webhooks`: signatures, content type, Origin, replayed
 * deliveries and the limits on slow or large requests, over real HTTP against a real dev server
 * (no worker: an accepted delivery only has to start its run).
 */
let plain: LoopwrightClient;
let hooks: WebhookServer | undefined;
/** Every run the receiver asked the client to start, in order. */
let started: string[];
let counting: EventClient;

beforeAll(async () => {
  plain = await LoopwrightClient.connect({ env: clientEnv({ LOOPWRIGHT_TASK_QUEUE: uniqueQueue('webhook-auth') }) });
  counting = {
    run: (loop, input, opts) => {
      started.push(opts?.id ?? loop);
      return plain.run(loop, input, opts);
    },
    temporal: plain.temporal,
    config: plain.config,
  };
});

beforeEach(() => {
  started = [];
});

afterEach(async () => {
  await hooks?.close();
  hooks = undefined;
});

afterAll(async () => {
  await plain.close();
});

const INPUT = { task: 'Say hi.', rubric: ['says hi'] };
const PATH = '/events/evaluate-optimize';

/** A fresh key, so every test's run id is its own. */
const freshKey = () => `gh:issue/${randomBytes(4).toString('hex')}`;

async function receiver(
  opts: { secret?: string; insecure?: boolean; limits?: Partial<WebhookLimits> } = { secret: SECRET },
): Promise<WebhookServer> {
  hooks = await startWebhookServer({ client: counting, port: 0, ...opts });
  return hooks;
}

const post = (d: Delivery = {}): Promise<Answer> =>
  deliver(`${hooks!.url}${PATH}`, { body: { key: freshKey(), input: INPUT }, ...d });

/** A refusal: the status, one `{ error }` line matching `message`, and no run asked for. */
function expectRefused(res: Answer, status: number, message: RegExp): void {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(res.body.error).toMatch(message);
  expect(res.body.error).not.toMatch(/\n/);
  expect(started).toEqual([]);
}

describe('signatures (X-Hub-Signature-256)', () => {
  test('a delivery without a signature gets 401 naming the header, and starts nothing', async () => {
    await receiver();
    const key = freshKey();
    expectRefused(
      await post({ body: { key, input: INPUT }, secret: false }),
      401,
      /^missing X-Hub-Signature-256 header: sign the raw body with HMAC-SHA256/,
    );
    await expect(plain.temporal.workflow.getHandle(`evaluate-optimize/${key}`).describe()).rejects.toThrow(
      WorkflowNotFoundError,
    );
  });

  test.each([
    [
      'signed with another secret',
      (raw: string) => sign(raw, 'not-the-secret'),
      /^X-Hub-Signature-256 does not match the body/,
    ],
    [
      'signed over other bytes (the body was changed)',
      (raw: string) => sign(`${raw} `),
      /^X-Hub-Signature-256 does not match the body/,
    ],
    [
      'signed with the secret itself as the header',
      () => `sha256=${SECRET}`,
      /^X-Hub-Signature-256 is malformed: expected sha256= and 64 hex digits$/,
    ],
    [
      'with a SHA-1 signature (X-Hub-Signature format)',
      () => 'sha1=2fd4e1c67a2d28fced849ee1bb76e7391b93eb12',
      /^X-Hub-Signature-256 is malformed/,
    ],
    ['with a truncated signature', (raw: string) => sign(raw).slice(0, 40), /^X-Hub-Signature-256 is malformed/],
  ])('a delivery %s gets 401 and starts nothing', async (_name, signature, message) => {
    await receiver();
    const raw = JSON.stringify({ key: freshKey(), input: INPUT });
    expectRefused(await post({ body: raw, headers: { 'x-hub-signature-256': signature(raw) } }), 401, message);
  });

  test('a badly signed delivery does not use up its delivery id: the signed one with that id is then accepted (201)', async () => {
    await receiver();
    const id = randomUUID();
    const body = { key: freshKey(), input: INPUT };
    expectRefused(await post({ body, secret: 'wrong', headers: { 'x-github-delivery': id } }), 401, /does not match/);
    expect((await post({ body, headers: { 'x-github-delivery': id } })).status).toBe(201);
    expect(started).toEqual([`evaluate-optimize/${body.key}`]);
  });

  test('a signed GitHub ping answers 200 { ping: true } and starts nothing', async () => {
    await receiver();
    const res = await post({
      body: { zen: 'Keep it logically awesome.', hook_id: 1 },
      headers: { 'x-github-event': 'ping' },
    });
    expect(res).toEqual({ status: 200, body: { ping: true } });
    expect(started).toEqual([]);
  });
});

describe('content type and browsers', () => {
  test.each([
    ['text/plain', 'text/plain;charset=UTF-8'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
    ['a JSON-ish type', 'application/jsonp'],
    ['JSON in another charset', 'application/json; charset=iso-8859-1'],
  ])('a correctly signed delivery sent as %s gets 415 and starts nothing', async (_name, type) => {
    await receiver();
    expectRefused(
      await post({ headers: { 'content-type': type } }),
      415,
      /^(Content-Type must be application\/json \(got ".+"\): send the body as JSON|charset iso-8859-1 is not supported: send UTF-8 JSON)$/,
    );
  });

  test('a delivery without any Content-Type gets 415', async () => {
    await receiver();
    const raw = JSON.stringify({ key: freshKey(), input: INPUT });
    const request = `POST ${PATH} HTTP/1.1\r\nHost: x\r\nX-GitHub-Delivery: ${randomUUID()}\r\nX-Hub-Signature-256: ${sign(raw)}\r\nContent-Length: ${raw.length}\r\n\r\n${raw}`;
    const res = await rawExchange(hooks!.url, [request]);
    expect(statusOf(res.text)).toBe(415);
    expect(res.text).toContain('{"error":"Content-Type must be application/json (got none): send the body as JSON"}');
    expect(started).toEqual([]);
  });

  test.each(['application/json; charset=utf-8', 'Application/JSON'])(
    'Content-Type %s is accepted (201)',
    async (type) => {
      await receiver();
      expect((await post({ headers: { 'content-type': type } })).status).toBe(201);
      expect(started).toHaveLength(1);
    },
  );

  test('a correctly signed delivery with an Origin header (a web page) gets 403 and starts nothing', async () => {
    await receiver();
    expectRefused(
      await post({ headers: { origin: 'https://evil.example' } }),
      403,
      /^requests from a browser \(Origin https:\/\/evil\.example\) are refused/,
    );
  });

  test('with --insecure an unsigned delivery is accepted, but text/plain and Origin are still refused', async () => {
    await receiver({ insecure: true });
    expectRefused(
      await post({ secret: false, headers: { 'content-type': 'text/plain' } }),
      415,
      /^Content-Type must be application\/json/,
    );
    expectRefused(await post({ secret: false, headers: { origin: 'null' } }), 403, /^requests from a browser/);
    expect((await post({ secret: false, headers: { 'x-github-delivery': null } })).status).toBe(201);
    expect(started).toHaveLength(1);
  });

  test('a receiver with neither a secret nor insecure refuses to start', async () => {
    await expect(startWebhookServer({ client: counting, port: 0 })).rejects.toThrow(UsageError);
    await expect(startWebhookServer({ client: counting, port: 0, secret: '' })).rejects.toThrow(
      /needs a secret to verify signatures, or insecure: true/,
    );
  });
});

describe('replayed deliveries (X-GitHub-Delivery)', () => {
  test('a correctly signed delivery replayed with the same delivery id gets 409 replayed delivery and starts nothing more', async () => {
    await receiver();
    const body = { key: freshKey(), input: INPUT, force: true };
    const id = randomUUID();
    expect((await post({ body, headers: { 'x-github-delivery': id } })).status).toBe(201);
    const again = await post({ body, headers: { 'x-github-delivery': id } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: `replayed delivery ${id}: a delivery with this id was accepted within the last 24 hours`,
    });
    expect(started).toEqual([`evaluate-optimize/${body.key}`]);
  });

  test('with a secret a delivery without X-GitHub-Delivery gets 400, and a malformed one 400', async () => {
    await receiver();
    expectRefused(
      await post({ headers: { 'x-github-delivery': null } }),
      400,
      /^missing X-GitHub-Delivery header: give every delivery a unique id/,
    );
    expectRefused(await post({ headers: { 'x-github-delivery': 'a b' } }), 400, /^X-GitHub-Delivery is malformed/);
  });

  test('a delivery that failed (400) may be sent again with the same id: it fails the same way, not as a replay', async () => {
    await receiver();
    const id = randomUUID();
    const unknown = { key: freshKey(), input: INPUT };
    const first = await deliver(`${hooks!.url}/events/no-such-loop`, {
      body: unknown,
      headers: { 'x-github-delivery': id },
    });
    const second = await deliver(`${hooks!.url}/events/no-such-loop`, {
      body: unknown,
      headers: { 'x-github-delivery': id },
    });
    expect([first.status, second.status]).toEqual([400, 400]);
    expect(second.body.error).toMatch(/^unknown loop "no-such-loop"/);
  });

  test('after the replay window a delivery id is accepted again (here the key is then a duplicate, 200)', async () => {
    await receiver({ secret: SECRET, limits: { replayWindowMs: 300 } });
    const body = { key: freshKey(), input: INPUT };
    const id = randomUUID();
    expect((await post({ body, headers: { 'x-github-delivery': id } })).status).toBe(201);
    expect((await post({ body, headers: { 'x-github-delivery': id } })).status).toBe(409);
    await new Promise((r) => setTimeout(r, 400));
    expect(await post({ body, headers: { 'x-github-delivery': id } })).toMatchObject({
      status: 200,
      body: { duplicate: true },
    });
  });

  test('a captured signed body sent again under a fresh delivery id for another loop gets 409 replayed body and starts nothing', async () => {
    await receiver();
    const body = { key: freshKey(), input: INPUT };
    expect((await post({ body })).status).toBe(201);
    started = [];
    // The signature covers the body only, not the path nor the delivery id.
    const other = await deliver(`${hooks!.url}/events/fix-test`, { body });
    expectRefused(
      other,
      409,
      /^replayed body: this exact signed body was accepted for loop evaluate-optimize within the last 24 hours; loop fix-test needs a delivery of its own/,
    );
    // For the same loop it is only a duplicate of its key: nothing new starts either way.
    expect(await post({ body })).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(started).toEqual([`evaluate-optimize/${body.key}`]);
  });

  test('a captured signed force body sent again under a fresh delivery id, after its run closed, gets 409 and does not rerun the key', async () => {
    await receiver();
    const body = { key: freshKey(), input: INPUT, force: true };
    expect((await post({ body })).status).toBe(201);
    await plain.temporal.workflow.getHandle(`evaluate-optimize/${body.key}`).terminate('closed for the test');
    started = [];
    expectRefused(
      await post({ body }),
      409,
      /^replayed body: .*; a forced rerun needs a delivery of its own \(a new body\)$/,
    );
    // A different body for the same key is its own delivery: the rerun its sender asked for.
    const fresh = await post({ body: { ...body, input: { ...INPUT, task: 'Say hi again.' } } });
    expect(fresh).toMatchObject({ status: 201, body: { duplicate: false } });
  });

  test('a signed force body refused for its input (400) is not remembered: sent again it is judged again (400), not as a replay', async () => {
    await receiver();
    const bad = { key: freshKey(), input: { task: '' }, force: true };
    const [first, second] = [await post({ body: bad }), await post({ body: bad })];
    expect([first.status, second.status]).toEqual([400, 400]);
    expect(second.body.error).toMatch(/^invalid input for loop evaluate-optimize/);
  });

  test('past the cap on remembered ids the oldest is forgotten first', async () => {
    await receiver({ secret: SECRET, limits: { maxDeliveryIds: 2 } });
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of [a, b, c]) expect((await post({ headers: { 'x-github-delivery': id } })).status).toBe(201);
    expect((await post({ headers: { 'x-github-delivery': c } })).status).toBe(409);
    expect((await post({ headers: { 'x-github-delivery': a } })).status).toBe(201);
  });
});

describe('what the receiver logs', () => {
  test('a signed delivery whose loop name decodes to an escape sequence and a line break is refused (400) and logged as one inert line', async () => {
    const lines: string[] = [];
    hooks = await startWebhookServer({ client: counting, port: 0, secret: SECRET, log: (l) => lines.push(l) });
    const res = await deliver(`${hooks.url}/events/%1b%5b31mred%0aPOST%20%2Fevents%2Ffix-test%20-%3E%20201`, {
      body: { key: freshKey(), input: INPUT },
    });
    expect(res.status).toBe(400);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(lines[0]).toContain('-> 400');
  });
});

describe('limits on size, time and connections', () => {
  const head = (extra: string) =>
    `POST ${PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Delivery: ${randomUUID()}\r\nX-Hub-Signature-256: ${sign('x')}\r\n${extra}\r\n`;

  test('a body declared larger than 1 MiB gets 413 before it is sent, and the connection is closed', async () => {
    await receiver();
    const res = await rawExchange(hooks!.url, [head(`Content-Length: ${1024 * 1024 + 1}\r\n`), '{"key":'], {
      waitMs: 5_000,
    });
    expect(statusOf(res.text)).toBe(413);
    expect(res.text).toContain('{"error":"body is larger than 1048576 bytes"}');
    expect(res.closedAfterMs).toBeLessThan(5_000);
    expect(started).toEqual([]);
  });

  test('a chunked body that grows past the cap gets 413 once it does', async () => {
    await receiver({ secret: SECRET, limits: { maxBodyBytes: 1_000 } });
    const chunk = `${(600).toString(16)}\r\n${'x'.repeat(600)}\r\n`;
    const res = await rawExchange(hooks!.url, [head('Transfer-Encoding: chunked\r\n'), chunk, chunk, chunk], {
      gapMs: 50,
      waitMs: 5_000,
    });
    expect(statusOf(res.text)).toBe(413);
    expect(res.text).toContain('body is larger than 1000 bytes');
    expect(started).toEqual([]);
  });

  test('headers sent a line at a time (slow loris) are cut off with 408 once the header timeout passes', async () => {
    await receiver({ secret: SECRET, limits: { headersTimeoutMs: 1_000 } });
    const drip = Array.from({ length: 30 }, (_, i) => `X-Drip-${i}: x\r\n`);
    const res = await rawExchange(hooks!.url, [`POST ${PATH} HTTP/1.1\r\nHost: x\r\n`, ...drip], {
      gapMs: 200,
      waitMs: 5_000,
    });
    expect(statusOf(res.text)).toBe(408);
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(1_000);
    expect(res.closedAfterMs).toBeLessThan(3_500);
  });

  test('a body that stops arriving gets 408 once the body timeout passes', async () => {
    await receiver({ secret: SECRET, limits: { bodyTimeoutMs: 1_000 } });
    const res = await rawExchange(hooks!.url, [head('Content-Length: 100\r\n'), '{"key":"a"'], { waitMs: 5_000 });
    expect(statusOf(res.text)).toBe(408);
    expect(res.text).toContain('{"error":"the body did not arrive within 1 seconds"}');
    expect(res.closedAfterMs).toBeLessThan(3_000);
    expect(started).toEqual([]);
  });

  test('connections beyond the cap are dropped on arrival; deliveries work again once others close', async () => {
    await receiver({ secret: SECRET, limits: { maxConnections: 2 } });
    const { hostname, port } = new URL(hooks!.url);
    const idle: Socket[] = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<Socket>((resolve) => {
            const s = connect(Number(port), hostname, () => resolve(s));
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 200));
    const third = await rawExchange(hooks!.url, [head('Content-Length: 1\r\n'), 'x'], { waitMs: 3_000 });
    expect(third.text).toBe('');
    expect(third.closedAfterMs).toBeLessThan(3_000);
    for (const s of idle) s.destroy();
    await new Promise((r) => setTimeout(r, 200));
    expect((await post()).status).toBe(201);
  });
});
