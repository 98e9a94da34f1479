import Anthropic, { InternalServerError, OverloadedError, RateLimitError } from '@anthropic-ai/sdk';
import type { ModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';

const MODEL = 'claude-test-1';
let server: ModelServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(script: ModelScript): Promise<Anthropic> {
  server = await startModelServer({ script, port: 0 });
  return new Anthropic({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
}

function ask(
  text: string,
  extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
): Anthropic.MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: text }], ...extra };
}

function loopHeaders(role: string, attempt: number, workflowId = 'fix-test/issue-42'): Record<string, string> {
  return { 'x-loopwright-role': role, 'x-loopwright-attempt': String(attempt), 'x-loopwright-workflow-id': workflowId };
}

describe('scripted model server, plain replies', () => {
  test('answers a text reply as a full Message with estimated usage and records the request', async () => {
    const client = await start({
      rules: [{ name: 'hello', reply: { content: [{ type: 'text', text: 'Hello there' }] } }],
    });
    const message = await client.messages.create(ask('Say hello', { system: 'Be brief.' }));
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.input_tokens).toBeGreaterThan(10);
    expect(server?.requests).toHaveLength(1);
    expect(server?.requests[0]).toMatchObject({
      model: MODEL,
      system: 'Be brief.',
      lastUser: 'Say hello',
      rule: 'hello',
      status: 200,
    });
    expect(server?.requests[0]?.body).toMatchObject({
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Say hello' }],
    });
  });

  test('answers a tool_use reply with a generated toolu_ id, stop_reason tool_use and the scripted usage', async () => {
    const usage = { input_tokens: 42, output_tokens: 7, cache_read_input_tokens: 30, cache_creation_input_tokens: 2 };
    const input = { pass: false, feedback: 'tests fail' };
    const client = await start({
      rules: [{ name: 'verdict', reply: { content: [{ type: 'tool_use', name: 'submit_verdict', input }], usage } }],
    });
    const message = await client.messages.create(ask('Judge this'));
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage).toMatchObject(usage);
    expect(message.content).toHaveLength(1);
    const block = message.content[0];
    expect(block).toMatchObject({ type: 'tool_use', name: 'submit_verdict', input });
    expect(block?.type === 'tool_use' ? block.id : '').toMatch(/^toolu_/);
  });
});

describe('scripted model server, matching', () => {
  const script: ModelScript = {
    rules: [
      { name: 'worker-1', match: { role: 'worker', attempt: 1 }, reply: { content: [{ type: 'text', text: 'w1' }] } },
      { name: 'worker-2', match: { role: 'worker', attempt: 2 }, reply: { content: [{ type: 'text', text: 'w2' }] } },
      { name: 'other-run', match: { workflowId: 'issue-7' }, reply: { content: [{ type: 'text', text: 'run 7' }] } },
      { name: 'checker', match: { role: 'checker' }, reply: { content: [{ type: 'text', text: 'c' }] } },
    ],
  };

  test('picks rules by the x-loopwright role, attempt and workflow-id headers and records them', async () => {
    const client = await start(script);
    const texts: string[] = [];
    for (const [role, attempt, workflowId] of [
      ['worker', 2, 'a'],
      ['checker', 1, 'a'],
      ['worker', 1, 'a'],
      ['judge', 1, 'fix/issue-7'],
    ] as const) {
      const message = await client.messages.create(ask('go'), { headers: loopHeaders(role, attempt, workflowId) });
      texts.push(message.content[0]?.type === 'text' ? message.content[0].text : '');
    }
    expect(texts).toEqual(['w2', 'c', 'w1', 'run 7']);
    expect(server?.requests.map((r) => [r.role, r.attempt, r.workflowId, r.rule])).toEqual([
      ['worker', 2, 'a', 'worker-2'],
      ['checker', 1, 'a', 'checker'],
      ['worker', 1, 'a', 'worker-1'],
      ['judge', 1, 'fix/issue-7', 'other-run'],
    ]);
  });

  test('matches system text blocks with cache_control and tool_result text in the last user message', async () => {
    const client = await start({
      rules: [
        { name: 'wrong-model', match: { model: 'other-model' }, reply: { content: [{ type: 'text', text: 'no' }] } },
        {
          name: 'needle',
          match: { system: 'strict checker', lastUser: 'FAIL add.test.ts', model: MODEL },
          reply: { content: [{ type: 'text', text: 'yes' }] },
        },
      ],
    });
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 50,
      system: [
        { type: 'text', text: 'You are a strict checker.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Be fair.' },
      ],
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'run_tests', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'FAIL add.test.ts' }] },
          ],
        },
      ],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'yes' }]);
    expect(server?.requests[0]).toMatchObject({
      system: 'You are a strict checker.\nBe fair.',
      lastUser: 'FAIL add.test.ts',
    });
  });

  test('falls through to the next rule once a rule has used its `times`', async () => {
    const client = await start({
      rules: [
        { name: 'once', times: 1, reply: { content: [{ type: 'text', text: 'first' }] } },
        { name: 'twice', times: 2, reply: { content: [{ type: 'text', text: 'later' }] } },
      ],
    });
    const texts = [];
    for (let i = 0; i < 3; i += 1) {
      const message = await client.messages.create(ask(`call ${i}`));
      texts.push(message.content[0]?.type === 'text' ? message.content[0].text : '');
    }
    expect(texts).toEqual(['first', 'later', 'later']);
    expect(server?.requests.map((r) => r.rule)).toEqual(['once', 'twice', 'twice']);
  });

  test('fails loudly with a 500 naming the request and how many rules were used up when no rule matches', async () => {
    const client = await start({
      rules: [
        { name: 'only-once', times: 1, reply: { content: [{ type: 'text', text: 'ok' }] } },
        { name: 'worker-only', match: { role: 'worker' }, reply: { content: [{ type: 'text', text: 'ok' }] } },
      ],
    });
    await client.messages.create(ask('first'));
    const error: unknown = await client.messages
      .create(ask('please review the diff'), { headers: loopHeaders('checker', 2) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    const apiError = error as InternalServerError;
    expect(apiError.status).toBe(500);
    expect(apiError.type).toBe('api_error');
    expect(apiError.message).toContain('no rule matches');
    expect(apiError.apiMessage).toBe(
      'scripted model: no rule matches this request (role=checker, attempt=2, workflowId=fix-test/issue-42, model=claude-test-1, ' +
        'last user: "please review the diff"); 2 rules, 1 used up (only-once)',
    );
    expect(server?.requests[1]).toMatchObject({ rule: null, status: 500 });
  });
});

describe('scripted model server, scripted errors', () => {
  test('a 429 with retry-after surfaces as RateLimitError carrying the header and a request-id', async () => {
    const client = await start({
      rules: [{ name: 'limited', error: { status: 429, headers: { 'retry-after': '7' } } }],
    });
    const error: unknown = await client.messages.create(ask('hi')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const apiError = error as RateLimitError;
    expect(apiError.status).toBe(429);
    expect(apiError.headers.get('retry-after')).toBe('7');
    expect(apiError.requestID).toMatch(/^req_/);
    expect(apiError.type).toBe('rate_limit_error');
    expect(apiError.apiMessage).toContain('limited');
    expect(server?.requests[0]).toMatchObject({ rule: 'limited', status: 429 });
  });

  test('a 529 with a scripted body surfaces as OverloadedError, then the next rule answers', async () => {
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    const client = await start({
      rules: [
        { name: 'overloaded', times: 1, error: { status: 529, body } },
        { name: 'fine', reply: { content: [{ type: 'text', text: 'back' }] } },
      ],
    });
    const error: unknown = await client.messages.create(ask('hi')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OverloadedError);
    expect((error as OverloadedError).status).toBe(529);
    expect((error as OverloadedError).error).toEqual(body);
    const message = await client.messages.create(ask('hi again'));
    expect(message.content).toEqual([{ type: 'text', text: 'back' }]);
  });
});
