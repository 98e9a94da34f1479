import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv } from '../../../activities/sandbox/sandbox';
import { END_MARKER, openResultsChannel } from '../../../activities/tests/results-channel';
import { runTests } from '../../../activities/tests/run-tests';

/**
 * node's results come through a socket the worker listens on: the runner's reporter is read,
 * anything else that connects is refused and counted, and a runner cut off before its end marker
 * ends the results. Then through the real sandbox: a test file that sends forged results for
 * another file's failing test (and one that kills the runner first) leaves that test failing
 * and the run marked as tampered.
 */
let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-channel-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Connects, sends `text`, and resolves once the connection has closed (ended, or cut by the worker). */
function send(socket: string, text: string, end = true): Promise<void> {
  return new Promise((resolve) => {
    const s = createConnection(socket);
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    s.on('connect', () => (end ? s.end(text) : s.write(text, () => s.destroy())));
  });
}

/** Connects and stays connected until `release` is called. */
async function hold(socket: string): Promise<{ release(text: string): Promise<void> }> {
  const s = createConnection(socket);
  await new Promise((resolve) => s.once('connect', resolve));
  return {
    release: (text) =>
      new Promise((resolve) => {
        s.once('close', () => resolve());
        s.end(text);
      }),
  };
}

const line = (name: string) => `${JSON.stringify({ type: 'test:pass', name, nesting: 0 })}\n`;

test('the first connection is read; one made while it is open is refused and counted; a later runner that ended cleanly may follow', async () => {
  const channel = await openResultsChannel(path.join(dir, 'r.sock'), 1024 * 1024);
  expect(statSync(channel.path).mode & 0o777).toBe(0o222);
  const runner = await hold(channel.path);
  await send(channel.path, line('forged'));
  await runner.release(`${line('first')}${END_MARKER}\n`);
  await send(channel.path, `${line('second')}${END_MARKER}\n`);
  const got = await channel.close();
  expect(got.text).toBe(`${line('first')}${line('second')}`);
  expect(got.intrusions).toBe(1);
  expect(got.cutOff).toBe(false);
  expect(got.problems.join('\n')).toMatch(/besides the runner's reporter connected .*1 connection, refused/);
});

test('a runner cut off before its end marker ends the results: whatever connects after it is refused', async () => {
  const channel = await openResultsChannel(path.join(dir, 'r.sock'), 1024 * 1024);
  await send(channel.path, line('before the kill'), false);
  await send(channel.path, `${line('forged')}${END_MARKER}\n`);
  const got = await channel.close();
  expect(got.text).toBe(line('before the kill'));
  expect(got.cutOff).toBe(true);
  expect(got.intrusions).toBe(1);
  expect(got.problems.join('\n')).toMatch(/stopped before the runner finished/);
});

test('single (jest, vitest, pytest, go: one whole report): any connection after the first is refused, even after it ended with its marker', async () => {
  const channel = await openResultsChannel(path.join(dir, 'r.sock'), 1024 * 1024, { single: true });
  await send(channel.path, `${line('runner')}${END_MARKER}\n`);
  await send(channel.path, `${line('forged')}${END_MARKER}\n`);
  const got = await channel.close();
  expect(got.connections).toEqual([line('runner')]);
  expect(got.intrusions).toBe(1);
  expect(got.cutOff).toBe(false);
});

const FAILING = [
  "const test = require('node:test');",
  "const assert = require('node:assert');",
  "test('add adds two numbers', () => assert.strictEqual(2 - 3, 5));",
  '',
].join('\n');

/** Script lines that find the results socket's path (in `socket`) from the reporter NODE_OPTIONS names, with `net` loaded. */
const FIND_SOCKET = [
  "const fs = require('node:fs');",
  "const net = require('node:net');",
  'const reporter = /--test-reporter="([^"]+)"/.exec(process.env.NODE_OPTIONS)[1];',
  'const socket = JSON.parse(/createConnection\\((".*?")\\)/.exec(fs.readFileSync(reporter, \'utf8\'))[1]);',
];

/** A test file that reads the socket's path from the reporter in NODE_OPTIONS and sends a pass for add's test. */
const forger = (killRunner: boolean) =>
  [
    ...FIND_SOCKET,
    "const file = require('node:path').join(__dirname, 'math.test.js');",
    "const forged = JSON.stringify({ type: 'test:pass', name: 'add adds two numbers', nesting: 0, file }) + '\\n{\"type\":\"loopwright:end\"}\\n';",
    killRunner ? "try { process.kill(process.ppid, 'SIGKILL'); } catch {}" : '',
    'const go = (n) => { const s = net.createConnection(socket); s.on("error", () => n < 100 && setTimeout(() => go(n + 1), 10)); s.on("connect", () => s.end(forged)); };',
    'go(0);',
    "require('node:test')('a test of its own', () => new Promise((r) => setTimeout(r, 300)));",
    '',
  ].join('\n');

test.each([
  ['sends forged results beside the runner', false],
  ['kills the runner, then sends forged results', true],
])(
  'through the real sandbox, a test file that %s leaves the failing test failing (or unreported) and the run marked tampered',
  async (_what, killRunner) => {
    const ws = path.join(dir, 'ws');
    mkdirSync(path.join(ws, 'test'), { recursive: true });
    writeFileSync(path.join(ws, 'test', 'math.test.js'), FAILING);
    writeFileSync(path.join(ws, 'test', 'forge.test.js'), forger(killRunner));
    const run = await runTests(
      { command: 'node --test' },
      { sandbox: createSandbox(sandboxConfigFromEnv(process.env)), workspace: ws, timeoutMs: 60_000 },
    );
    const add = run.results.filter((t) => t.name === 'add adds two numbers');
    expect(add.every((t) => t.outcome !== 'passed')).toBe(true);
    expect(run.tampered).toMatch(killRunner ? /stopped before the runner finished/ : /besides the runner's reporter/);
  },
  60_000,
);

test('through the real sandbox, a connection after the runner ended that reports one of its tests again marks the run tampered; a second runner of other files does not', async () => {
  const ws = path.join(dir, 'ws');
  mkdirSync(path.join(ws, 'test'), { recursive: true });
  mkdirSync(path.join(ws, 'more'), { recursive: true });
  // The runner reports this test passed; a process that connects once the runner has ended
  // reports it failed (worse outcomes win): a canary that passed, hidden.
  writeFileSync(
    path.join(ws, 'test', 'canary.test.js'),
    "require('node:test')('canary: an assertion that must fail', () => {});\n",
  );
  writeFileSync(path.join(ws, 'more', 'other.test.js'), "require('node:test')('another file', () => {});\n");
  writeFileSync(
    path.join(ws, 'late.js'),
    [
      ...FIND_SOCKET,
      "const file = require('node:path').join(__dirname, 'test', 'canary.test.js');",
      "const event = { type: 'test:fail', name: 'canary: an assertion that must fail', nesting: 0, file, details: { error: { message: 'x' } } };",
      'net.createConnection(socket).end(JSON.stringify(event) + \'\\n{"type":"loopwright:end"}\\n\');',
      '',
    ].join('\n'),
  );
  const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
  const late = await runTests(
    { command: 'node --test test/ && node late.js' },
    { sandbox, workspace: ws, timeoutMs: 60_000 },
  );
  expect(late.tampered).toMatch(
    /a later connection reported tests from a file an earlier runner had reported \(test\/canary\.test\.js\)/,
  );
  const two = await runTests(
    { command: 'node --test test/ && node --test more/' },
    { sandbox, workspace: ws, timeoutMs: 60_000 },
  );
  expect(two.tampered).toBeUndefined();
  expect(two.results.map((t) => t.name).sort()).toEqual(['another file', 'canary: an assertion that must fail']);
}, 60_000);

test('through the real sandbox, a connection after the runner ended that reports a new test from a file the runner ran (its file failed to load) marks the run tampered', async () => {
  const ws = path.join(dir, 'ws');
  mkdirSync(path.join(ws, 'test'), { recursive: true });
  mkdirSync(path.join(ws, 'src'), { recursive: true });
  // The code under test throws as it loads: the runner reports only the file's failure, never
  // the test inside it, and a process that connects once the runner has ended reports that test passed.
  writeFileSync(path.join(ws, 'src', 'calc.js'), "throw new Error('broken');\n");
  writeFileSync(
    path.join(ws, 'test', 'math.test.js'),
    [
      "const test = require('node:test');",
      "const { add } = require('../src/calc.js');",
      "test('add adds two numbers', () => require('node:assert').strictEqual(add(2, 3), 5));",
      '',
    ].join('\n'),
  );
  writeFileSync(
    path.join(ws, 'late.js'),
    [
      ...FIND_SOCKET,
      "const file = require('node:path').join(__dirname, 'test', 'math.test.js');",
      "const events = [{ type: 'test:start', name: 'add adds two numbers', nesting: 0, file }, { type: 'test:pass', name: 'add adds two numbers', nesting: 0, file }];",
      "net.createConnection(socket).end(events.map((e) => JSON.stringify(e) + '\\n').join('') + '{\"type\":\"loopwright:end\"}\\n');",
      '',
    ].join('\n'),
  );
  const run = await runTests(
    { command: 'node --test test/ ; node late.js' },
    { sandbox: createSandbox(sandboxConfigFromEnv(process.env)), workspace: ws, timeoutMs: 60_000 },
  );
  expect(run.results.some((t) => t.file === 'test/math.test.js' && t.outcome === 'failed')).toBe(true);
  expect(run.tampered).toMatch(
    /a later connection reported tests from a file an earlier runner had reported \(test\/math\.test\.js\)/,
  );
}, 60_000);
