import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { startWebhookServer, type WebhookServer } from '../../client/commands/webhooks';
import type { EventClient } from '../../client/events';
import { LoopwrightClient } from '../../client/loopwright-client';
import { ServerUnavailableError } from '../../common/errors';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { clientEnv, testStack, uniqueQueue, type TestStack } from '../helpers/temporal';
import { deliver, SECRET, type Answer } from './webhook-requests';

/** `loopwright webhooks`: a signed POST /events/<loop> delivers an event like `loopwright event`. */
let model: ModelServer | undefined;
let stack: TestStack | undefined;
let hooks: WebhookServer | undefined;

let plain: LoopwrightClient;

beforeAll(async () => {
  plain = await LoopwrightClient.connect({
    env: clientEnv({ LOOPWRIGHT_TASK_QUEUE: uniqueQueue('webhook-no-worker') }),
  });
});

afterEach(async () => {
  const [h, st, m] = [hooks, stack, model];
  hooks = stack = model = undefined;
  await h?.close();
  await st?.close();
  await m?.close();
});

afterAll(async () => {
  await plain.close();
});

const INPUT = { task: 'Say hi.', rubric: ['says hi'] };

/** A signed, GitHub-style delivery to the receiver (see webhook-requests.ts). */
async function post(path: string, body: unknown, method = 'POST'): Promise<Answer> {
  return deliver(`${hooks!.url}${path}`, { method, body: method === 'GET' ? undefined : body });
}

/** Every execution with this workflow id that the server's visibility lists, once it lists `atLeast`. */
async function executions(client: LoopwrightClient, workflowId: string, atLeast = 1): Promise<string[]> {
  for (let i = 0; ; i++) {
    const runs: string[] = [];
    for await (const wf of client.temporal.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
      runs.push(wf.runId);
    if (runs.length >= atLeast || i >= 50) return runs;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the webhook receiver on a real dev server', () => {
  test('a POST starts the run (201), the same key again is a duplicate (200) with its state, and force after completion starts it again (201)', async () => {
    model = await startModelServer({
      script: script(workerSays(1, 'hi', { times: 2 }), judgeSays(1, true, [], '', { times: 2 })),
      port: 0,
    });
    const s = (stack = await testStack('webhook', model.url));
    hooks = await startWebhookServer({ client: s.client, port: 0, secret: SECRET });
    expect(hooks.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const id = 'evaluate-optimize/gh:pull/7';
    await s.run(async () => {
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT })).toEqual({
        status: 201,
        body: { workflowId: id, duplicate: false },
      });
      const again = await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ workflowId: id, duplicate: true });
      expect(['running', 'verifying', 'completed']).toContain(again.body.state);
      expect((await s.client.wait(id)).state).toBe('completed');
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT })).toEqual({
        status: 200,
        body: { workflowId: id, duplicate: true, state: 'completed' },
      });
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT, force: true })).toEqual({
        status: 201,
        body: { workflowId: id, duplicate: false },
      });
      expect((await s.client.wait(id)).state).toBe('completed');
    });
    expect(model.requests.filter((r) => r.role === 'worker').length).toBe(2);
  });

  test('a delivery signed exactly as GitHub signs one starts exactly one run end to end; the same request replayed is refused (409) and a redelivery of the key is a duplicate', async () => {
    model = await startModelServer({ script: script(workerSays(1, 'hi'), judgeSays(1, true)), port: 0 });
    const s = (stack = await testStack('webhook-github', model.url));
    hooks = await startWebhookServer({ client: s.client, port: 0, secret: SECRET });
    const key = `github:acme/app/issues/${randomBytes(4).toString('hex')}`;
    const raw = Buffer.from(`{"key":"${key}","input":{"task":"Say hi.","rubric":["says hi"]}}`, 'utf8');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/044aadd',
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-github-hook-id': '292430182',
      'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`,
    };
    const send = async (h: Record<string, string>) => {
      const res = await fetch(`${hooks!.url}/events/evaluate-optimize`, { method: 'POST', headers: h, body: raw });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const id = `evaluate-optimize/${key}`;
    await s.run(async () => {
      expect(await send(headers)).toEqual({ status: 201, body: { workflowId: id, duplicate: false } });
      const replayed = await send(headers);
      expect(replayed.status).toBe(409);
      expect(replayed.body.error).toMatch(/^replayed delivery [0-9a-f-]{36}: /);
      expect((await s.client.wait(id)).state).toBe('completed');
      const redelivered = await send({ ...headers, 'x-github-delivery': randomUUID() });
      expect(redelivered).toEqual({ status: 200, body: { workflowId: id, duplicate: true, state: 'completed' } });
    });
    expect(await executions(s.client, id)).toHaveLength(1);
    expect(model.requests.filter((r) => r.role === 'worker').length).toBe(1);
  });

  test.each([
    [
      'malformed JSON',
      '/events/evaluate-optimize',
      '{"key": "a",',
      /^body is not valid JSON \(.+\): send \{ "key": \.\.\., "input": \.\.\. \}$/,
    ],
    ['a body that is not an object', '/events/evaluate-optimize', '[1, 2]', /^body must be a JSON object/],
    [
      'a missing key',
      '/events/evaluate-optimize',
      { input: INPUT },
      /^key: required, a string of letters, digits and \._:-\/ \(at most 200 characters\)$/,
    ],
    [
      'an invalid key',
      '/events/evaluate-optimize',
      { key: 'a b?', input: INPUT },
      /^event key "a b\?" has characters that are not allowed \(" " "\?"\)/,
    ],
    ['a missing input', '/events/evaluate-optimize', { key: 'k1' }, /^input: required/],
    [
      'a force that is not a boolean',
      '/events/evaluate-optimize',
      { key: 'k1', input: INPUT, force: 'yes' },
      /^force: expected true or false$/,
    ],
    [
      'an unknown loop',
      '/events/no-such-loop',
      { key: 'k1', input: INPUT },
      /^unknown loop "no-such-loop": known loops are evaluate-optimize/,
    ],
    [
      'input that fails the loop schema',
      '/events/evaluate-optimize',
      { key: 'k1', input: { task: 'x' } },
      /^invalid input for loop evaluate-optimize: rubric: /,
    ],
  ])('%s gets 400 with a one-line error naming the problem, and starts nothing', async (_name, path, body, message) => {
    hooks = await startWebhookServer({ client: plain, port: 0, secret: SECRET });
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(res.body.error).toMatch(message);
    expect(res.body.error).not.toMatch(/\n/);
    await expect(plain.temporal.workflow.getHandle('evaluate-optimize/k1').describe()).rejects.toThrow(
      WorkflowNotFoundError,
    );
  });

  test('other paths get 404 and other methods on an event path get 405', async () => {
    hooks = await startWebhookServer({ client: plain, port: 0, secret: SECRET });
    expect(await post('/', { key: 'k', input: INPUT })).toEqual({
      status: 404,
      body: { error: 'no such endpoint /: POST events to /events/<loop>' },
    });
    expect((await post('/events/evaluate-optimize/extra', { key: 'k', input: INPUT })).status).toBe(404);
    expect((await post('/events/', { key: 'k', input: INPUT })).status).toBe(404);
    expect(await post('/events/evaluate-optimize', undefined, 'GET')).toEqual({
      status: 405,
      body: { error: 'GET is not allowed on /events/evaluate-optimize: use POST' },
    });
  });
});

describe('the webhook receiver when Temporal cannot be reached', () => {
  test('a delivery gets 503 with the error that says how to start a server', async () => {
    const unreachable: EventClient = {
      run: () => Promise.reject(new ServerUnavailableError('127.0.0.1:1')),
      temporal: undefined as never,
      config: {
        temporalAddress: '127.0.0.1:1',
        namespace: 'default',
        taskQueue: 'none',
        workerModel: 'm',
        checkerModel: 'm',
        redact: [],
      },
    };
    hooks = await startWebhookServer({ client: unreachable, port: 0, secret: SECRET });
    const res = await post('/events/evaluate-optimize', { key: 'k', input: INPUT });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatch(
      /^cannot reach the Temporal server at 127\.0\.0\.1:1: start one with `npx loopwright dev`/,
    );
  });
});
