import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../server/dev-server';
import { isPidAlive } from '../../server/dev-server-lock';
import { runCli, startCli, type Background } from '../helpers/cli';

/**
 * The CLI end to end, as a user runs it: `loopwright model-server` and `loopwright dev` as
 * real processes, then run / status / approve / list / bad input against them.
 */
const home = mkdtempSync(path.join(tmpdir(), 'loopwright-e2e-'));
let env: Record<string, string | undefined>;
let model: Background;
let dev: Background;

const verdict = (passed: boolean) => ({
  type: 'tool_use',
  name: 'submit_verdict',
  input: {
    passed,
    reason: passed ? 'ok' : 'too long',
    failed_items: passed ? [] : ['short'],
    required_correction: passed ? '' : 'Be short.',
  },
});
const rules = [
  {
    name: 'pass-w1',
    match: { workflowId: 'e2e-pass', role: 'worker', attempt: 1 },
    reply: { content: [{ type: 'text', text: 'a long answer' }] },
  },
  {
    name: 'pass-c1',
    match: { workflowId: 'e2e-pass', role: 'checker', attempt: 1 },
    reply: { content: [verdict(false)] },
  },
  {
    name: 'pass-w2',
    match: { workflowId: 'e2e-pass', role: 'worker', attempt: 2, lastUser: 'Be short.' },
    reply: { content: [{ type: 'text', text: 'short' }] },
  },
  {
    name: 'pass-c2',
    match: { workflowId: 'e2e-pass', role: 'checker', attempt: 2 },
    reply: { content: [verdict(true)] },
  },
  {
    name: 'esc-w',
    match: { workflowId: 'e2e-esc', role: 'worker' },
    reply: { content: [{ type: 'text', text: 'never short enough' }] },
  },
  { name: 'esc-c', match: { workflowId: 'e2e-esc', role: 'checker' }, reply: { content: [verdict(false)] } },
  {
    name: 'budget-w',
    match: { workflowId: 'e2e-budget', role: 'worker' },
    reply: { content: [{ type: 'text', text: 'short' }] },
  },
  { name: 'budget-c', match: { workflowId: 'e2e-budget', role: 'checker' }, reply: { content: [verdict(true)] } },
  {
    name: 'cancel-w',
    match: { workflowId: 'e2e-cancel', role: 'worker' },
    reply: { content: [{ type: 'text', text: 'long' }] },
  },
  { name: 'cancel-c', match: { workflowId: 'e2e-cancel', role: 'checker' }, reply: { content: [verdict(false)] } },
];
const input = (maxAttempts: number) => JSON.stringify({ task: 'Say something short.', rubric: ['short'], maxAttempts });
const cli = (...args: string[]) => runCli(args, env);
const oneErrorLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(stderr).not.toMatch(/\n\s+at /);
};

beforeAll(async () => {
  const scriptFile = path.join(home, 'script.json');
  writeFileSync(scriptFile, JSON.stringify({ rules }));
  const [modelPort, port, uiPort] = [await freePort(), await freePort(), await freePort()];
  const base = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOOPWRIGHT_HOME: home,
    TEMPORAL_CLI: process.env.LOOPWRIGHT_TEMPORAL_CLI,
  };
  model = startCli(
    ['model-server', '--script', scriptFile, '--port', String(modelPort), '--log', path.join(home, 'model.log')],
    base,
  );
  await model.waitFor(/listening on/);
  env = {
    ...base,
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${modelPort}`,
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    LOOPWRIGHT_TASK_QUEUE: 'e2e',
  };
  dev = startCli(['dev', '--port', String(port), '--ui-port', String(uiPort)], env);
  await dev.waitFor(/worker: task queue e2e/);
}, 180_000);

afterAll(async () => {
  await dev?.stop();
  await model?.stop();
});

describe('loopwright CLI against `loopwright dev` and the scripted model server', () => {
  test('dev prints the Web UI URL and keeps its SQLite file under LOOPWRIGHT_HOME', () => {
    expect(dev.output()).toMatch(/Web UI: http:\/\/localhost:\d+/);
    expect(existsSync(path.join(home, 'dev.db'))).toBe(true);
  });

  test('run --wait follows a run that passes on attempt 2 and exits 0; status --json is the run record', async () => {
    const run = await cli('run', 'evaluate-optimize', '--input', input(3), '--id', 'e2e-pass', '--wait');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('e2e-pass');
    expect(run.stdout).toMatch(/state\s+completed \(passed\)/);
    expect(run.stderr).toMatch(/completed\s+attempt 2\/3\s+\d+ tokens/);
    const status = await cli('status', 'e2e-pass', '--json');
    expect(status.code).toBe(0);
    const record = JSON.parse(status.stdout);
    expect(record).toMatchObject({
      workflowId: 'e2e-pass',
      loop: 'evaluate-optimize',
      state: 'completed',
      ok: true,
      output: 'short',
      stopReason: 'passed',
      decision: null,
    });
    expect(record.attempts.map((a: { n: number; passed: boolean }) => [a.n, a.passed])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(record.attempts[0].reasons).toEqual(['too long']);
    expect(Object.keys(record.attempts[0].usage).sort()).toEqual([
      'cacheReadTokens',
      'cacheWriteTokens',
      'costUsd',
      'inputTokens',
      'outputTokens',
    ]);
    const log = readFileSync(path.join(home, 'model.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(
      log.filter((l: { workflowId: string }) => l.workflowId === 'e2e-pass').map((l: { rule: string }) => l.rule),
    ).toEqual(['pass-w1', 'pass-c1', 'pass-w2', 'pass-c2']);
  });

  test('an escalated run exits 3 on --wait, approve applies, and a second approve is refused with exit 2', async () => {
    const run = await cli('run', 'evaluate-optimize', '--input', input(1), '--id', 'e2e-esc', '--wait');
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/awaiting_human/);
    const approve = await cli('approve', 'e2e-esc', '--by', 'ada', '--note', 'fine by me');
    expect(approve.code).toBe(0);
    expect(approve.stdout).toMatch(/approve by ada: applied/);
    const record = JSON.parse((await cli('status', 'e2e-esc', '--json')).stdout);
    expect(record).toMatchObject({
      state: 'completed',
      stopReason: 'approved',
      override: true,
      decision: { kind: 'approve', by: 'ada', note: 'fine by me' },
    });
    const again = await cli('approve', 'e2e-esc', '--by', 'ada');
    expect(again.code).toBe(2);
    oneErrorLine(again.stderr);
    expect(again.stderr).toMatch(/decision refused by run e2e-esc: the run has ended \(completed\)/);
  });

  test('budget extends a run stopped by its cost budget, recorded with who and how much; cancel ends a waiting run canceled', async () => {
    const tight = JSON.stringify({ task: 'Say something short.', rubric: ['short'], budget: { maxCostUsd: 0.00001 } });
    const run = await cli('run', 'evaluate-optimize', '--input', tight, '--id', 'e2e-budget', '--wait');
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/state\s+awaiting_human \(cost\)/);
    expect(run.stdout).toMatch(/decide with: loopwright approve\|reject\|retry\|budget e2e-budget/);
    const bad = await cli('budget', 'e2e-budget', '--by', 'ada');
    expect(bad.code).toBe(2);
    oneErrorLine(bad.stderr);
    const extend = await cli('budget', 'e2e-budget', '--by', 'ada', '--cost', '1');
    expect(extend.code).toBe(0);
    expect(extend.stdout).toMatch(/budget extension by ada: applied/);
    let record;
    for (let i = 0; i < 50; i++) {
      record = JSON.parse((await cli('status', 'e2e-budget', '--json')).stdout);
      if (record.state === 'completed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(record).toMatchObject({
      state: 'completed',
      stopReason: 'passed',
      budget: { extensions: [{ by: 'ada', costUsd: 1 }] },
    });
    expect(record.budget.maxCostUsd).toBeCloseTo(1.00001, 6);

    const waiting = await cli('run', 'evaluate-optimize', '--input', input(1), '--id', 'e2e-cancel', '--wait');
    expect(waiting.code).toBe(3);
    const cancel = await cli('cancel', 'e2e-cancel', '--json');
    expect(cancel.code).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({
      state: 'canceled',
      stopReason: 'canceled',
      attempts: [{ n: 1, passed: false }],
    });
  });

  test('list filters by loop and state through the search attributes', async () => {
    const all = await cli('list', '--loop', 'evaluate-optimize', '--json');
    expect(all.code).toBe(0);
    const ids = JSON.parse(all.stdout).map((r: { workflowId: string }) => r.workflowId);
    expect(ids).toEqual(expect.arrayContaining(['e2e-pass', 'e2e-esc']));
    const none = await cli('list', '--state', 'rejected', '--json');
    expect(JSON.parse(none.stdout)).toEqual([]);
    const table = await cli('list', '--state', 'completed');
    expect(table.stdout).toMatch(/^ID\s+LOOP\s+STATE/);
    expect(table.stdout).toMatch(/e2e-pass\s+evaluate-optimize\s+completed/);
  });

  test.each([
    [['run', 'no-such-loop', '--input', '{}'], /unknown loop "no-such-loop": known loops are evaluate-optimize/],
    [['run', 'evaluate-optimize', '--input', '{not json'], /--input is not valid JSON/],
    [['run', 'evaluate-optimize', '--input', '{"task":"x"}'], /invalid input for loop evaluate-optimize: rubric: /],
    [['run', 'evaluate-optimize', '--input', '@/no/such/file.json'], /cannot read input file \/no\/such\/file.json/],
    [['status', 'no-such-run'], /no run with id no-such-run/],
    [['list', '--state', 'sleeping'], /unknown state "sleeping"/],
    [['retry', 'e2e-esc', '--by', 'ada', '--guidance', 'x', '--attempts', 'many'], /--attempts must be a whole number/],
  ])('bad input %j gets one error line and exit 2', async (args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    oneErrorLine(result.stderr);
    expect(result.stderr).toMatch(message);
  });

  test('a server that is not running gets one line that says how to start it, and exit 2', async () => {
    const result = await runCli(['list'], { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    expect(result.code).toBe(2);
    oneErrorLine(result.stderr);
    expect(result.stderr).toMatch(
      /cannot reach the Temporal server at 127\.0\.0\.1:\d+: start one with `npx loopwright dev`/,
    );
  });

  test('a second `loopwright dev` on the same home says one is already running, exit 2', async () => {
    const second = await runCli(['dev', '--port', String(await freePort()), '--headless'], env);
    expect(second.code).toBe(2);
    oneErrorLine(second.stderr);
    expect(second.stderr).toMatch(/loopwright dev is already running \(pid \d+/);
  });

  test('Ctrl-C stops the worker and the dev server cleanly', async () => {
    const lock = JSON.parse(readFileSync(path.join(home, 'dev.lock'), 'utf8'));
    const serverPid: number = lock.serverPid ?? lock.pid;
    expect(isPidAlive(serverPid)).toBe(true);
    const code = await dev.stop('SIGINT');
    expect(code).toBe(0);
    expect(dev.output()).toMatch(/stopped\./);
    expect(isPidAlive(serverPid)).toBe(false);
    expect(existsSync(path.join(home, 'dev.lock'))).toBe(false);
  });
});
