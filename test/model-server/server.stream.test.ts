import Anthropic, { APIConnectionTimeoutError, OverloadedError } from '@anthropic-ai/sdk';
import type { ModelScript } from '../../model-server/script';
import { CLIENT_CLOSED_STATUS, startModelServer, type ModelServer } from '../../model-server/server';

const MODEL = 'claude-test-1';
let server: ModelServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(script: ModelScript, clientOptions: { timeout?: number } = {}): Promise<Anthropic> {
  server = await startModelServer({ script, port: 0 });
  return new Anthropic({ apiKey: 'test', baseURL: server.url, maxRetries: 0, ...clientOptions });
}

const ask = (text: string): Anthropic.MessageCreateParamsNonStreaming => ({
  model: MODEL,
  max_tokens: 100,
  messages: [{ role: 'user', content: text }],
});

const longText = 'The test fails because add() subtracts; I will change it to return a + b and re-run the suite.';
const verdictInput = {
  pass: true,
  feedback: 'all 12 tests pass',
  details: { failing: [], notes: 'quote " and\nnewline' },
};

describe('scripted model server, streaming', () => {
  test('stream().finalMessage() rebuilds the same text, tool_use input and usage as a plain create()', async () => {
    const client = await start({
      rules: [
        {
          name: 'mixed',
          reply: {
            content: [
              { type: 'text', text: longText },
              { type: 'tool_use', id: 'toolu_fixed', name: 'submit_verdict', input: verdictInput },
            ],
            usage: {
              input_tokens: 300,
              output_tokens: 40,
              cache_read_input_tokens: 250,
              cache_creation_input_tokens: 10,
            },
          },
        },
      ],
    });
    const plain = await client.messages.create(ask('judge'));
    const stream = client.messages.stream(ask('judge'));
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const streamed = await stream.finalMessage();

    expect(streamed.content).toEqual(plain.content);
    expect(streamed.content).toEqual([
      { type: 'text', text: longText },
      { type: 'tool_use', id: 'toolu_fixed', name: 'submit_verdict', input: verdictInput },
    ]);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(longText);
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.model).toBe(MODEL);
    expect(streamed.id).toMatch(/^msg_/);
    expect(streamed.usage).toMatchObject(plain.usage);
    expect(streamed.usage).toMatchObject({ input_tokens: 300, output_tokens: 40, cache_read_input_tokens: 250 });
    expect(server?.requests.map((r) => [(r.body as { stream?: boolean }).stream ?? false, r.status])).toEqual([
      [false, 200],
      [true, 200],
    ]);
  });

  test('sends the SSE event sequence of the Messages API for stream: true', async () => {
    await start({ rules: [{ name: 'short', reply: { content: [{ type: 'text', text: 'hi' }] } }] });
    const response = await fetch(`${server?.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('hello'), stream: true }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = [...(await response.text()).matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(events).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  test('a scripted error on a streaming request is an HTTP error before any event', async () => {
    const client = await start({ rules: [{ name: 'overloaded', error: { status: 529 } }] });
    const error: unknown = await client.messages
      .stream(ask('hi'))
      .finalMessage()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OverloadedError);
    expect((error as OverloadedError).type).toBe('overloaded_error');
  });
});

describe('scripted model server, delays', () => {
  test('waits delayMs before answering', async () => {
    const client = await start({
      rules: [{ name: 'slow', delayMs: 300, reply: { content: [{ type: 'text', text: 'late' }] } }],
    });
    const started = Date.now();
    const message = await client.messages.create(ask('hi'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(message.content).toEqual([{ type: 'text', text: 'late' }]);
  });

  test('drops a request whose client times out during the delay, records it as 499 and still answers the retry', async () => {
    const client = await start(
      {
        rules: [
          { name: 'hang', times: 1, delayMs: 5_000, reply: { content: [{ type: 'text', text: 'too late' }] } },
          { name: 'quick', reply: { content: [{ type: 'text', text: 'quick' }] } },
        ],
      },
      { timeout: 150 },
    );
    const error: unknown = await client.messages.create(ask('first')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    const message = await client.messages.create(ask('retry'));
    expect(message.content).toEqual([{ type: 'text', text: 'quick' }]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server?.requests.map((r) => [r.rule, r.status])).toEqual([
      ['hang', CLIENT_CLOSED_STATUS],
      ['quick', 200],
    ]);
  });

  test('close() returns promptly and cuts the connection of a request still waiting out its delay', async () => {
    await start({ rules: [{ name: 'hang', delayMs: 10_000, reply: { content: [{ type: 'text', text: 'never' }] } }] });
    const pending = fetch(`${server?.url}/v1/messages`, { method: 'POST', body: JSON.stringify(ask('hi')) }).catch(
      (e: unknown) => e,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await server?.close();
    server = undefined;
    expect(Date.now() - started).toBeLessThan(1_000);
    // fetch's TypeError comes from another realm than jest's, so compare by message.
    expect(await pending).toHaveProperty('message', 'fetch failed');
  });
});
