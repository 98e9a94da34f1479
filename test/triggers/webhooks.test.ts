import { WorkflowNotFoundError } from '@temporalio/client';
import { startWebhookServer, type WebhookServer } from '../../client/commands/webhooks';
import type { EventClient } from '../../client/events';
import { LoopwrightClient } from '../../client/loopwright-client';
import { ServerUnavailableError } from '../../common/errors';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { testAddress, testStack, uniqueQueue, type TestStack } from '../helpers/temporal';

/** `loopwright webhooks`: POST /events/<loop> delivers an event like `loopwright event`. */
let model: ModelServer | undefined;
let stack: TestStack | undefined;
let hooks: WebhookServer | undefined;

let plain: LoopwrightClient;

beforeAll(async () => {
  plain = await LoopwrightClient.connect({ env: { TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: uniqueQueue('webhook-no-worker') } });
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

async function post(path: string, body: unknown, method = 'POST'): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${hooks!.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the webhook receiver on a real dev server', () => {
  test('a POST starts the run (201), the same key again is a duplicate (200) with its state, and force after completion starts it again (201)', async () => {
    model = await startModelServer({ script: script(workerSays(1, 'hi', { times: 2 }), judgeSays(1, true, [], '', { times: 2 })), port: 0 });
    const s = (stack = await testStack('webhook', model.url));
    hooks = await startWebhookServer({ client: s.client, port: 0 });
    expect(hooks.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const id = 'evaluate-optimize/gh:pull/7';
    await s.run(async () => {
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT })).toEqual({ status: 201, body: { workflowId: id, duplicate: false } });
      const again = await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ workflowId: id, duplicate: true });
      expect(['running', 'verifying', 'completed']).toContain(again.body.state);
      expect((await s.client.wait(id)).state).toBe('completed');
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT })).toEqual({ status: 200, body: { workflowId: id, duplicate: true, state: 'completed' } });
      expect(await post('/events/evaluate-optimize', { key: 'gh:pull/7', input: INPUT, force: true })).toEqual({ status: 201, body: { workflowId: id, duplicate: false } });
      expect((await s.client.wait(id)).state).toBe('completed');
    });
    expect(model.requests.filter((r) => r.role === 'worker').length).toBe(2);
  });

  test.each([
    ['malformed JSON', '/events/evaluate-optimize', '{"key": "a",', /^body is not valid JSON \(.+\): send \{ "key": \.\.\., "input": \.\.\. \}$/],
    ['a body that is not an object', '/events/evaluate-optimize', '[1, 2]', /^body must be a JSON object/],
    ['a missing key', '/events/evaluate-optimize', { input: INPUT }, /^key: required, a string of letters, digits and \._:-\/ \(at most 200 characters\)$/],
    ['an invalid key', '/events/evaluate-optimize', { key: 'a b?', input: INPUT }, /^event key "a b\?" has characters that are not allowed \(" " "\?"\)/],
    ['a missing input', '/events/evaluate-optimize', { key: 'k1' }, /^input: required/],
    ['a force that is not a boolean', '/events/evaluate-optimize', { key: 'k1', input: INPUT, force: 'yes' }, /^force: expected true or false$/],
    ['an unknown loop', '/events/no-such-loop', { key: 'k1', input: INPUT }, /^unknown loop "no-such-loop": known loops are evaluate-optimize/],
    ['input that fails the loop schema', '/events/evaluate-optimize', { key: 'k1', input: { task: 'x' } }, /^invalid input for loop evaluate-optimize: rubric: /],
  ])('%s gets 400 with a one-line error naming the problem, and starts nothing', async (_name, path, body, message) => {
    hooks = await startWebhookServer({ client: plain, port: 0 });
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(res.body.error).toMatch(message);
    expect(res.body.error).not.toMatch(/\n/);
    await expect(plain.temporal.workflow.getHandle('evaluate-optimize/k1').describe()).rejects.toThrow(WorkflowNotFoundError);
  });

  test('other paths get 404 and other methods on an event path get 405', async () => {
    hooks = await startWebhookServer({ client: plain, port: 0 });
    expect(await post('/', { key: 'k', input: INPUT })).toEqual({ status: 404, body: { error: 'no such endpoint /: POST events to /events/<loop>' } });
    expect((await post('/events/evaluate-optimize/extra', { key: 'k', input: INPUT })).status).toBe(404);
    expect((await post('/events/', { key: 'k', input: INPUT })).status).toBe(404);
    expect(await post('/events/evaluate-optimize', undefined, 'GET')).toEqual({ status: 405, body: { error: 'GET is not allowed on /events/evaluate-optimize: use POST' } });
  });
});

describe('the webhook receiver when Temporal cannot be reached', () => {
  test('a delivery gets 503 with the error that says how to start a server', async () => {
    const unreachable: EventClient = {
      run: () => Promise.reject(new ServerUnavailableError('127.0.0.1:1')),
      temporal: undefined as never,
      config: { temporalAddress: '127.0.0.1:1', namespace: 'default', taskQueue: 'none', workerModel: 'm', checkerModel: 'm', redact: [] },
    };
    hooks = await startWebhookServer({ client: unreachable, port: 0 });
    const res = await post('/events/evaluate-optimize', { key: 'k', input: INPUT });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatch(/^cannot reach the Temporal server at 127\.0\.0\.1:1: start one with `npx loopwright dev`/);
  });
});
