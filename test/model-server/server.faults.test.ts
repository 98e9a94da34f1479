import { InputError } from '../../common/errors';
import { parseModelScript, type ModelRule } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { must } from '../../common/must';

/** The scripted model server's stream faults, seen from a raw HTTP client. */
let server: ModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const usage = { input_tokens: 700, output_tokens: 33, cache_read_input_tokens: 100, cache_creation_input_tokens: 7 };
const text = 'thirty-three characters of text.'; // 2 deltas of 16 characters

async function start(extra: Partial<ModelRule>): Promise<ModelServer> {
  const rule = { name: 'r', reply: { content: [{ type: 'text', text }], usage }, ...extra };
  server = await startModelServer({ script: parseModelScript({ rules: [rule] }, 'test'), port: 0 });
  return server;
}

const body = (stream: boolean) =>
  JSON.stringify({ model: 'm', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] });

/** Reads a streamed answer: the SSE events that arrived, and how the body ended. */
async function read(s: ModelServer): Promise<{ events: string[]; data: string[]; ending: string }> {
  const response = await fetch(`${s.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(true),
  });
  const reader = response.body!.getReader();
  let raw = '';
  let ending = 'ended';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      raw += Buffer.from(value).toString('utf8');
    }
  } catch (err) {
    ending = `error: ${(err as Error).message}`;
  }
  return {
    events: [...raw.matchAll(/^event: (\S+)$/gm)].map((m) => m[1] ?? ''), // the group is required: never ''
    data: [...raw.matchAll(/^data: (.*)$/gm)].map((m) => m[1] ?? ''),
    ending,
  };
}

describe('stream faults', () => {
  test('drop after message_start: one event, then the connection breaks; the record shows the usage sent', async () => {
    const s = await start({ fault: { kind: 'drop', after: 'message_start' } });
    const got = await read(s);
    expect(got.events).toEqual(['message_start']);
    expect(got.ending).toMatch(/^error: terminated/);
    expect(s.requests[0]).toMatchObject({
      status: 200,
      events: 1,
      fault: 'drop after 1 events',
      usage: { ...usage, output_tokens: 1 },
    });
  });

  test('drop after a count of events: exactly that many arrive; after message_delta the record has the final usage', async () => {
    const s = await start({ fault: { kind: 'drop', after: 4 } });
    expect((await read(s)).events).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
    await server!.close();
    const t = await start({ fault: { kind: 'drop', after: 'message_delta' } });
    const got = await read(t);
    expect(got.events.at(-1)).toBe('message_delta');
    expect(t.requests[0]).toMatchObject({ events: 7, usage });
  });

  test('end: the response ends properly, early', async () => {
    const s = await start({ fault: { kind: 'end', after: 'content_block_stop' } });
    const got = await read(s);
    expect(got).toMatchObject({
      ending: 'ended',
      events: [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
      ],
    });
  });

  test('malformed: an event whose data is not JSON, then the response ends', async () => {
    const s = await start({ fault: { kind: 'malformed', after: 'message_start' } });
    const got = await read(s);
    expect(got.events).toEqual(['message_start', 'content_block_delta']);
    expect(() => JSON.parse(must(got.data[1], 'a second data line'))).toThrow(SyntaxError);
    expect(got.ending).toBe('ended');
    expect(s.requests[0]).toMatchObject({ events: 2, fault: 'malformed after 1 events' });
  });

  test('error: an SSE error event (overloaded_error by default, or the one given), then the response ends', async () => {
    const s = await start({ fault: { kind: 'error', after: 'message_start' } });
    const got = await read(s);
    expect(got.events).toEqual(['message_start', 'error']);
    expect(JSON.parse(must(got.data[1], 'a second data line'))).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded (scripted stream error)' },
    });
    await server!.close();
    const t = await start({ fault: { kind: 'error', after: 0, error: { type: 'api_error', message: 'boom' } } });
    expect((await read(t)).data).toEqual([
      JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'boom' } }),
    ]);
    expect(t.requests).toHaveLength(1);
    expect(t.requests[0]?.usage).toBeUndefined();
  });

  test('stall: nothing after the fault until the client leaves; close() does not wait for it', async () => {
    const s = await start({ fault: { kind: 'stall', after: 'message_start' } });
    const response = await fetch(`${s.url}/v1/messages`, { method: 'POST', body: body(true) });
    const reader = response.body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toMatch(/^event: message_start/);
    const next = reader.read().then(
      () => 'more',
      (err: Error) => `error: ${err.message}`,
    );
    const quiet = await Promise.race([next, new Promise((r) => setTimeout(() => r('quiet'), 500))]);
    expect(quiet).toBe('quiet');
    expect(s.requests[0]).toMatchObject({ events: 1, fault: 'stall after 1 events' });
    const started = Date.now();
    await server!.close();
    server = undefined;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await next).toMatch(/^error/);
  });

  test('eventDelayMs spaces the events out', async () => {
    const s = await start({ eventDelayMs: 100 });
    const started = Date.now();
    expect((await read(s)).events).toHaveLength(8);
    expect(Date.now() - started).toBeGreaterThanOrEqual(680);
  });

  test('a plain request answered by a rule with a fault gets a 400 that says to stream', async () => {
    const s = await start({ fault: { kind: 'drop', after: 1 } });
    const response = await fetch(`${s.url}/v1/messages`, { method: 'POST', body: body(false) });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'scripted model: rule "r" scripts a drop fault of a stream; send "stream": true',
    );
  });

  test('a plain reply records its usage', async () => {
    const s = await start({});
    await fetch(`${s.url}/v1/messages`, { method: 'POST', body: body(false) });
    expect(s.requests[0]?.usage).toEqual(usage);
  });
});

describe('fault scripts are validated', () => {
  test.each([
    [
      { name: 'x', fault: { kind: 'drop', after: 1 }, error: { status: 500 } },
      'rules.0: "fault" and "eventDelayMs" shape a streamed reply: they need "reply"',
    ],
    [
      { name: 'x', fault: { kind: 'drop', after: 1, error: { type: 'a', message: 'b' } }, reply: { content: [] } },
      'rules.0.fault.error: "error" goes with kind "error" only',
    ],
    [{ name: 'x', fault: { kind: 'explode', after: 1 }, reply: { content: [] } }, 'rules.0.fault.kind'],
    [{ name: 'x', fault: { kind: 'drop', after: 'message_end' }, reply: { content: [] } }, 'rules.0.fault.after'],
  ])('%j is refused', (rule, problem) => {
    expect(() => parseModelScript({ rules: [rule] }, 's.json')).toThrow(InputError);
    expect(() => parseModelScript({ rules: [rule] }, 's.json')).toThrow(problem);
  });
});
