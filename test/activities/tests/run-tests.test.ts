import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type SandboxConfig } from '../../../activities/sandbox/sandbox';
import { isWithin, SYSTEM_PATHS } from '../../../activities/sandbox/profile';
import { runTests, UnknownTestRunnerError, type TestRun, type TestSpec } from '../../../activities/tests/run-tests';
import { ConfigError } from '../../../common/errors';
import { outcomes } from './fixtures';

/**
 * The test-results layer end to end: real runners (node's, jest, pytest, go) run through the
 * real bubblewrap sandbox on sample projects, and their tests come back by identity.
 */
const REPO = path.join(__dirname, '..', '..', '..');
// jest is the project's own: the sandbox may read its node_modules (as LOOPWRIGHT_SANDBOX_READ would).
const config: SandboxConfig = sandboxConfigFromEnv({
  ...process.env,
  LOOPWRIGHT_SANDBOX_READ: realpathSync(path.join(REPO, 'node_modules')),
});
const sandbox = createSandbox(config);

/** The first `name` on PATH, as the sandbox would find it (only what it mounts is there), if it runs `args`. */
function visibleTool(name: string, args: string[]): boolean {
  const visible = [...SYSTEM_PATHS, ...config.readOnly];
  for (const dir of (process.env.PATH ?? '').split(':').filter((d) => path.isAbsolute(d))) {
    const bin = path.join(dir, name);
    if (!visible.some((v) => isWithin(v, bin))) continue;
    if (!existsSync(bin)) continue;
    if (!visible.some((v) => isWithin(v, realpathSync(bin)))) return false;
    return spawnSync(bin, args, { env: { PATH: process.env.PATH, HOME: tmpdir() }, timeout: 20_000 }).status === 0;
  }
  return false;
}
const HAS_PYTEST = visibleTool('python3', ['-c', 'import pytest']);
const HAS_GO = visibleTool('go', ['version']);

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-run-tests-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function project(files: Record<string, string>): string {
  const ws = path.join(dir, 'ws');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
    writeFileSync(path.join(ws, file), text);
  }
  return ws;
}

const run = (spec: TestSpec, workspace: string, timeoutMs = 60_000): Promise<TestRun> =>
  runTests(spec, { sandbox, workspace, timeoutMs });
const files = (ws: string) => readdirSync(ws, { recursive: true }).map(String).sort();

const NODE_TESTS = {
  'package.json': JSON.stringify({ name: 'sample', private: true, scripts: { test: 'node --test' } }),
  'test/math.test.js': [
    "const test = require('node:test');",
    "const { skip } = require('node:test');",
    "const { describe, it } = require('node:test');",
    "const assert = require('node:assert');",
    "test('adds', () => assert.strictEqual(1 + 1, 2));",
    "test('subtracts', () => assert.strictEqual(1 - 1, 1));",
    "test('quoted skip', { 'skip': true }, () => {});",
    "test('computed only', { ['only']: true }, () => {});",
    "test('expression skip', { skip: false || true }, () => {});",
    "skip('destructured skip', () => {});",
    "test.todo('later');",
    "describe('suite', () => { it('inside', () => {}); });",
  ].join('\n'),
  'test/exit.test.js': "process.exit(0);\nrequire('node:test')('never runs', () => {});\n",
};

describe('runTests through the real sandbox', () => {
  test('node via npm test: tests by identity, skips in every way written, todo; a file that exits 0 at the top shows as itself and its test is missing', async () => {
    const ws = project(NODE_TESTS);
    const before = files(ws);
    const r = await run({ command: 'npm test' }, ws);
    expect(r).toMatchObject({ runner: 'node', sandbox: 'bwrap', timedOut: false, code: 1 });
    expect(r.problem).toBeUndefined();
    expect(outcomes(r.results)).toEqual({
      'test/exit.test.js > test/exit.test.js': 'passed',
      'test/math.test.js > adds': 'passed',
      'test/math.test.js > subtracts': 'failed',
      'test/math.test.js > quoted skip': 'skipped',
      'test/math.test.js > computed only': 'passed',
      'test/math.test.js > expression skip': 'skipped',
      'test/math.test.js > destructured skip': 'skipped',
      'test/math.test.js > later': 'todo',
      'test/math.test.js > suite > inside': 'passed',
    });
    expect(r.results.some((t) => t.name === 'never runs')).toBe(false);
    // The spec reporter keeps the output readable; nothing was written into the workspace.
    expect(r.output).toMatch(/✖ subtracts/);
    expect(files(ws)).toEqual(before);
  });

  test("node --test-only: { ['only']: true } turns the file's other tests into skips, as the runner reports", async () => {
    const ws = project(NODE_TESTS);
    const r = await run({ command: 'node --test --test-only test/math.test.js' }, ws);
    const byName = Object.fromEntries(r.results.map((t) => [t.name, t.outcome]));
    expect(byName).toMatchObject({ 'computed only': 'passed', adds: 'skipped', subtracts: 'skipped' });
  });

  test('the results folder is made outside the workspace and removed afterwards', async () => {
    const ws = project(NODE_TESTS);
    const privateTmp = path.join(dir, 'tmp');
    mkdirSync(privateTmp);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = privateTmp;
    try {
      const r = await run({ command: 'node --test' }, ws);
      expect(r.results.length).toBeGreaterThan(0);
    } finally {
      process.env.TMPDIR = saved;
    }
    expect(readdirSync(privateTmp)).toEqual([]);
  });

  test('a run killed at its timeout keeps what was reported before and says so', async () => {
    const ws = project({
      'test/slow.test.js':
        "const test = require('node:test');\ntest('quick', () => {});\ntest('hangs', () => new Promise(() => setInterval(() => {}, 1000)));\n",
    });
    const r = await run({ command: 'node --test' }, ws, 5_000);
    expect(r.timedOut).toBe(true);
    expect(r.problem).toMatch(/^the command timed out after 5s/);
    // node streams each result as it comes: the test that finished is there, the one that hung is not.
    expect(outcomes(r.results)).toEqual({ 'test/slow.test.js > quick': 'passed' });
  });

  test('jest: describe > test by file, skip and todo as jest reports them, a file that does not parse is a failed test', async () => {
    const ws = project({
      'package.json': JSON.stringify({ name: 'sample-jest', private: true, jest: { testEnvironment: 'node' } }),
      'test/math.test.js':
        "describe('math', () => {\n  test('adds', () => expect(1 + 1).toBe(2));\n  test('subtracts', () => expect(1 - 1).toBe(1));\n  test.skip('skipped', () => {});\n  test.todo('later');\n});\n",
      'test/broken.test.js': "test('x', () => {\n",
    });
    const r = await run({ command: `node ${path.join(REPO, 'node_modules', 'jest', 'bin', 'jest.js')} --ci` }, ws);
    expect(r).toMatchObject({ runner: 'jest', sandbox: 'bwrap' });
    expect(outcomes(r.results)).toEqual({
      'test/math.test.js > math > adds': 'passed',
      'test/math.test.js > math > subtracts': 'failed',
      'test/math.test.js > math > skipped': 'skipped',
      'test/math.test.js > math > later': 'todo',
      'test/broken.test.js > test/broken.test.js': 'failed',
    });
  });

  test('jest: a test file that calls process.exit(0) at the top stops jest with no report: no results, and the problem says why', async () => {
    const ws = project({
      'package.json': JSON.stringify({ name: 'sample-jest-exit', private: true, jest: { testEnvironment: 'node' } }),
      'test/exit.test.js': "process.exit(0);\ntest('never runs', () => {});\n",
      'test/math.test.js': "test('adds', () => expect(1 + 1).toBe(2));\n",
    });
    const r = await run({ command: `node ${path.join(REPO, 'node_modules', 'jest', 'bin', 'jest.js')} --ci` }, ws);
    // In band (as here) jest itself exits 0 without a report; in a worker the file would fail. Never a pass.
    expect(r.results.find((t) => t.name === 'never runs')?.outcome ?? 'absent').not.toBe('passed');
    if (r.results.length === 0) expect(r.problem).toMatch(/the runner wrote no results: .*process\.exit/);
    else expect(r.results.find((t) => t.file === 'test/exit.test.js')?.outcome).toBe('failed');
  });

  (HAS_PYTEST ? test : test.skip)(
    `pytest: file, classes and test; skip, xfail (todo) and failures as pytest reports them${HAS_PYTEST ? '' : ' (skipped: no python3 with pytest that the sandbox can see; apt-get install python3-pytest)'}`,
    async () => {
      const ws = project({
        'tests/__init__.py': '',
        'tests/test_math.py': [
          'import pytest',
          '',
          'def test_adds():',
          '    assert 1 + 1 == 2',
          '',
          'def test_subtracts():',
          '    assert 1 - 1 == 1',
          '',
          '@pytest.mark.skip(reason="later")',
          'def test_skipped():',
          '    pass',
          '',
          '@pytest.mark.xfail(reason="known")',
          'def test_known():',
          '    assert False',
          '',
          'class TestGroup:',
          '    def test_inside(self):',
          '        pass',
          '',
        ].join('\n'),
      });
      const r = await run({ command: 'python3 -m pytest -p no:cacheprovider' }, ws);
      expect(r).toMatchObject({ runner: 'pytest', sandbox: 'bwrap' });
      expect(outcomes(r.results)).toEqual({
        'tests/test_math.py > test_adds': 'passed',
        'tests/test_math.py > test_subtracts': 'failed',
        'tests/test_math.py > test_skipped': 'skipped',
        'tests/test_math.py > test_known': 'todo',
        'tests/test_math.py > TestGroup > test_inside': 'passed',
      });
      expect(r.results.find((t) => t.name === 'test_subtracts')!.line).toBe(6);
    },
  );

  (HAS_GO ? test : test.skip)(
    `go test: package > test > subtest; pass, fail and skip${HAS_GO ? '' : ' (skipped: no go on a PATH the sandbox can see)'}`,
    async () => {
      const ws = project({
        'go.mod': 'module example.com/m\n\ngo 1.21\n',
        'm_test.go': [
          'package m',
          '',
          'import "testing"',
          '',
          'func TestAdd(t *testing.T) { if 1+1 != 2 { t.Fatal("no") } }',
          'func TestSub(t *testing.T) { t.Errorf("1-1 = %d", 1-1) }',
          'func TestSkip(t *testing.T) { t.Skip("later") }',
          'func TestTable(t *testing.T) { t.Run("one case", func(t *testing.T) {}) }',
          '',
        ].join('\n'),
      });
      const r = await run({ command: 'go test ./...' }, ws, 180_000);
      expect(r).toMatchObject({ runner: 'go', sandbox: 'bwrap' });
      expect(outcomes(r.results)).toEqual({
        'example.com/m > TestAdd': 'passed',
        'example.com/m > TestSub': 'failed',
        'example.com/m > TestSkip': 'skipped',
        'example.com/m > TestTable': 'passed',
        'example.com/m > TestTable > one_case': 'passed',
      });
      expect(r.output).toMatch(/--- FAIL: TestSub/);
    },
    200_000,
  );

  test('junit: reports the run wrote under junitPath are read; stale ones and symlinks are not; a junitPath leading out is refused', async () => {
    const xml = (name: string) =>
      `<testsuite name="s"><testcase classname="com.example.T" name="${name}"/></testsuite>`;
    const ws = project({ 'fresh.xml.in': xml('fresh'), 'reports/old.xml': xml('stale') });
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(path.join(ws, 'reports', 'old.xml'), old, old);
    symlinkSync('/etc/passwd', path.join(ws, 'reports', 'link.xml'));
    const r = await run(
      {
        command: 'mkdir -p reports/sub && cp fresh.xml.in reports/sub/TEST-fresh.xml',
        runner: 'junit',
        junitPath: 'reports',
      },
      ws,
    );
    expect(r.problem).toBeUndefined();
    expect(outcomes(r.results)).toEqual({ 'com.example.T > fresh': 'passed' });
    await expect(run({ command: 'true', runner: 'junit', junitPath: '../elsewhere' }, ws)).rejects.toThrow(
      /junitPath \.\.\/elsewhere leads outside the repository/,
    );
    symlinkSync(dir, path.join(ws, 'out'));
    await expect(run({ command: 'true', runner: 'junit', junitPath: 'out' }, ws)).rejects.toThrow(/through a symlink/);
    await expect(run({ command: 'true', runner: 'junit' }, ws)).rejects.toThrow(ConfigError);
  });

  test('LOOPWRIGHT_SANDBOX=off: the same results by identity, recorded as sandbox none', async () => {
    const ws = project(NODE_TESTS);
    const off = createSandbox(sandboxConfigFromEnv({ ...process.env, LOOPWRIGHT_SANDBOX: 'off' }));
    const r = await runTests({ command: 'npm test' }, { sandbox: off, workspace: ws, timeoutMs: 60_000 });
    const bwrap = await run({ command: 'npm test' }, ws);
    expect(r.sandbox).toBe('none');
    expect(outcomes(r.results)).toEqual(outcomes(bwrap.results));
  });

  test('a command whose runner cannot be told is refused before anything runs, saying how to name it', async () => {
    const ws = project({ Makefile: 'test:\n\ttouch ran\n' });
    await expect(run({ command: 'make test' }, ws)).rejects.toThrow(UnknownTestRunnerError);
    expect(existsSync(path.join(ws, 'ran'))).toBe(false);
  });

  test('a command that runs no tests gives no results and says what to check', async () => {
    const ws = project({ 'package.json': JSON.stringify({ name: 'x', scripts: { test: 'jest' } }) });
    const r = await run({ command: 'echo no tests here', runner: 'jest' }, ws);
    expect(r.results).toEqual([]);
    expect(r.problem).toMatch(/^the runner wrote no results: did the command run jest/);
  });
});
