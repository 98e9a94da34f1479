import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { InputError, UsageError } from '../../common/errors';
import { runModelServerCommand } from '../../model-server/main';
import { loadModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';

const FIXTURES = join(__dirname, '..', 'fixtures', 'model-scripts');
const EXAMPLE = join(FIXTURES, 'example.json');
let server: ModelServer | undefined;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'model-server-'));
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

const ask = (text: string): Anthropic.MessageCreateParamsNonStreaming => ({
  model: 'claude-test-1',
  max_tokens: 100,
  messages: [{ role: 'user', content: text }],
});

async function loadError(path: string): Promise<unknown> {
  return loadModelScript(path).then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('loadModelScript', () => {
  test('loads the documented example script with all five rules', async () => {
    const script = await loadModelScript(EXAMPLE);
    expect(script.rules.map((r) => r.name)).toEqual([
      'checker-overloaded-once',
      'worker-first-try',
      'checker-rejects-first-try',
      'worker-second-try',
      'checker-accepts',
    ]);
  });

  test('rejects a bad rule with a one-line InputError naming the file and each bad field', async () => {
    const path = join(FIXTURES, 'bad-rule.json');
    const error = await loadError(path);
    expect(error).toBeInstanceOf(InputError);
    const { message, issues } = error as InputError;
    expect(message).not.toContain('\n');
    expect(message.startsWith(`invalid model script ${path}: `)).toBe(true);
    expect(issues).toEqual([
      'rules.0.match.attempt: Invalid input: expected number, received string',
      'rules.0: a rule needs exactly one of "reply" or "error"',
    ]);
    expect(message).toBe(`invalid model script ${path}: ${issues.join('; ')}`);
  });

  test('rejects a rule with both reply and error, a typo in match and a duplicate name, listing every problem', async () => {
    const path = join(dir, 'script.json');
    const reply = { content: [{ type: 'text', text: 'ok' }] };
    const rules = [
      { name: 'a', match: { lastuser: 'x' }, reply },
      { name: 'b', reply, error: { status: 529 } },
      { name: 'a', reply },
    ];
    await writeFile(path, JSON.stringify({ rules }));
    const error = (await loadError(path)) as InputError;
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).not.toContain('\n');
    expect(error.issues).toEqual([
      'rules.0.match: Unrecognized key: "lastuser"',
      'rules.1: a rule needs exactly one of "reply" or "error"',
      'rules.2.name: duplicate rule name "a"',
    ]);
    expect(error.message).toBe(`invalid model script ${path}: ${error.issues.join('; ')}`);
  });

  test('rejects invalid JSON with an InputError and a missing file with a UsageError', async () => {
    const path = join(dir, 'broken.json');
    await writeFile(path, '{ "rules": [ }');
    const broken = await loadError(path);
    expect(broken).toBeInstanceOf(InputError);
    expect((broken as Error).message).toMatch(new RegExp(`^invalid model script ${path}: \\(json\\): `));
    const missing = await loadError(join(dir, 'nope.json'));
    expect(missing).toBeInstanceOf(UsageError);
    expect(missing).not.toBeInstanceOf(InputError);
    expect((missing as Error).message).toContain(`cannot read model script ${join(dir, 'nope.json')}`);
  });
});

describe('runModelServerCommand and the log file', () => {
  test('prints one line with the URL and rule count, then plays the documented example loop to the SDK', async () => {
    const lines: string[] = [];
    server = await runModelServerCommand({ scriptPath: EXAMPLE, port: 0, out: (line) => lines.push(line) });
    expect(lines).toEqual([
      `model server listening on ${server.url} (script: ${EXAMPLE}, 5 rules); set ANTHROPIC_BASE_URL to it`,
    ]);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    const client = new Anthropic({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
    const call = async (
      role: string,
      attempt: number,
      text: string,
      system = 'You are the worker.',
    ): Promise<string> => {
      const headers = { 'x-loopwright-role': role, 'x-loopwright-attempt': String(attempt) };
      const message = await client.messages.create({ ...ask(text), system }, { headers }).catch((e: Error) => e);
      if (message instanceof Error) return message.name;
      return JSON.stringify(
        message.content.map((b) => (b.type === 'text' ? b.text : b.type === 'tool_use' ? b.input : b.type)),
      );
    };
    const checker = 'You are the checker.';
    const transcript = [
      await call('worker', 1, 'fix add()'),
      await call('checker', 1, 'diff: return a - b', checker),
      await call('checker', 1, 'diff: return a - b', checker),
      await call('worker', 2, 'feedback: add() subtracts; it must return a + b'),
      await call('checker', 2, 'diff: return a + b', checker),
    ];
    expect(transcript[0]).toContain('a - b');
    expect(transcript[1]).toBe('OverloadedError');
    expect(transcript[2]).toContain('"passed":false');
    expect(transcript[3]).toContain('a + b');
    expect(transcript[4]).toContain('"passed":true');
    expect(server.requests.map((r) => r.rule)).toEqual([
      'worker-first-try',
      'checker-overloaded-once',
      'checker-rejects-first-try',
      'worker-second-try',
      'checker-accepts',
    ]);
  });

  test('appends one JSON line per request, with role, rule, status and the full request', async () => {
    const logFile = join(dir, 'requests.jsonl');
    server = await startModelServer({
      script: { rules: [{ name: 'once', times: 1, reply: { content: [{ type: 'text', text: 'ok' }] } }] },
      logFile,
    });
    const client = new Anthropic({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
    const headers = { 'x-loopwright-role': 'worker', 'x-loopwright-attempt': '3', 'x-loopwright-workflow-id': 'wf-1' };
    await client.messages.create({ ...ask('hello'), system: 'sys' }, { headers });
    await client.messages.create(ask('again')).catch(() => undefined);
    await server.close();
    server = undefined;
    const lines = (await readFile(logFile, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      role: 'worker',
      attempt: 3,
      workflowId: 'wf-1',
      model: 'claude-test-1',
      rule: 'once',
      status: 200,
      system: 'sys',
      lastUser: 'hello',
      request: { system: 'sys', max_tokens: 100 },
    });
    expect(lines[1]).toMatchObject({ role: null, attempt: null, rule: null, status: 500, lastUser: 'again' });
    expect(Number.isNaN(Date.parse(String(lines[0]?.at)))).toBe(false);
  });
});

describe('scripted model server, HTTP edges', () => {
  const script = { rules: [{ name: 'any', reply: { content: [{ type: 'text' as const, text: 'ok' }] } }] };

  test('answers 404 not_found_error off POST /v1/messages (query ignored) and 400 invalid_request_error for bad bodies', async () => {
    server = await startModelServer({ script });
    const post = (path: string, body: string): Promise<Response> =>
      fetch(`${server?.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const notFound = await fetch(`${server.url}/v1/models`);
    const beta = await post('/v1/messages?beta=true', JSON.stringify(ask('hi')));
    const badJson = await post('/v1/messages', '{ nope');
    const noMaxTokens = await post('/v1/messages', JSON.stringify({ model: 'm', messages: [] }));
    expect([notFound.status, beta.status, badJson.status, noMaxTokens.status]).toEqual([404, 200, 400, 400]);
    expect(await notFound.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(await badJson.json()).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringContaining('not valid JSON') },
    });
    expect(await noMaxTokens.json()).toMatchObject({ error: { message: 'max_tokens: Field required' } });
    expect(server.requests.map((r) => [r.status, r.rule])).toEqual([
      [404, null],
      [200, 'any'],
      [400, null],
      [400, null],
    ]);
  });

  test('refuses to start on a port in use with a UsageError', async () => {
    server = await startModelServer({ script });
    const error: unknown = await startModelServer({ script, port: server.port }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(`127.0.0.1:${server.port} is already in use`);
  });
});
