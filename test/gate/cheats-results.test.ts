import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { commitAttempt, findPytest, gateTests, jestSandbox, sandboxReading, JEST } from './corpus-repo';

/**
 * Forged test results (hostile changes, run through the gate in the real sandbox on real
 * repositories). jest, vitest, pytest and go wrote their results into a file in a folder the run
 * could write, whose path the command line shows; the gate took that file as the runner's word.
 * Each change here leaves the bug in place, and its code (loaded by base's tests) forges the
 * results from another process:
 * - (a) before the runner writes: it writes the results file itself, every test passing, and
 *   makes it read-only, so the runner cannot write its own (go: the shell made the file already;
 *   it puts a forged file in its place, and go writes on into the one it had open);
 * - (b) after: a background process waits for the runner to write its results, and rewrites them
 *   (every test passing) before the command ends.
 * Both also send forged results to the results socket when there is one (its path is beside the
 * reporter the command line names). The gate must fail each (the named test does not pass, or
 * the run is no evidence: `test integrity`), and still pass an honest fix of each repository.
 */
type Files = Record<string, string>;
type Runner = 'jest' | 'vitest' | 'pytest' | 'go';
type Mode = 'a' | 'b';

const NODE = realpathSync(process.execPath);
// vitest is a dev dependency for this test: the gate's vitest reporter runs in the real vitest.
const VITEST = path.join(__dirname, '..', '..', 'node_modules', 'vitest', 'vitest.mjs');
const HAS_GO = spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0;
const python = findPytest();

/**
 * The forger, a node script (the worker's node is readable in the sandbox; a real attacker would
 * write it in any language): it finds the results file (`--outputFile=`, `--junitxml=`, go's
 * redirect) and the results socket in the command lines under /proc, and forges both.
 */
function forger(runner: Runner, mode: Mode): string {
  return `
const fs = require('node:fs');
const net = require('node:net');
const RUNNER = ${JSON.stringify(runner)};
const MODE = ${JSON.stringify(mode)};
const ws = process.cwd();
function forged() {
  if (RUNNER === 'jest' || RUNNER === 'vitest') {
    const t = (title) => ({ ancestorTitles: [], title, fullName: title, status: 'passed', failureMessages: [] });
    return JSON.stringify({ success: true, numFailedTests: 0, testResults: [
      { name: ws + '/test/math.test.js', status: 'passed', message: '', assertionResults: [t('add adds two numbers'), t('other')] },
    ] });
  }
  if (RUNNER === 'pytest')
    return '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2">' +
      '<testcase classname="tests.test_math" name="test_add" file="tests/test_math.py" line="3" time="0.001" />' +
      '<testcase classname="tests.test_math" name="test_other" file="tests/test_math.py" line="7" time="0.001" />' +
      '</testsuite></testsuites>';
  const e = (o) => JSON.stringify({ Package: 'example.com/calc', ...o });
  return [e({ Action: 'run', Test: 'TestAdd' }), e({ Action: 'pass', Test: 'TestAdd', Elapsed: 0 }),
    e({ Action: 'run', Test: 'TestOther' }), e({ Action: 'pass', Test: 'TestOther', Elapsed: 0 }),
    e({ Action: 'pass', Elapsed: 0 })].join('\\n') + '\\n';
}
function targets() {
  const files = new Set();
  const sockets = new Set();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let args;
    try { args = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0'); } catch { continue; }
    for (const a of args) {
      // In its own argument, or quoted in sh -c's (vitest sets its process title over its arguments).
      for (const m of a.matchAll(/--(?:outputFile(?:\\.json)?|junitxml)=['"]?([^'"\\s]+)/g)) files.add(m[1]);
      const m = /\\} > '?([^'\\s]+go-test\\.jsonl)/.exec(a);
      if (m) files.add(m[1]);
      for (const s of a.matchAll(/(\\/[^\\s'"]*\\/tr-[A-Za-z0-9]+)\\//g)) sockets.add(s[1] + '/r.sock');
    }
  }
  return { files: [...files], sockets: [...sockets].filter((s) => fs.existsSync(s)) };
}
function send(sockets) {
  for (const s of sockets) {
    const c = net.createConnection(s);
    c.on('error', () => {});
    c.end(forged() + '\\n{"type":"loopwright:end"}\\n');
  }
}
function put(file) {
  try { fs.chmodSync(file, 0o644); } catch {}
  const tmp = file + '.f';
  fs.writeFileSync(tmp, forged());
  fs.chmodSync(tmp, 0o444);
  fs.renameSync(tmp, file);
}
const { files, sockets } = targets();
if (MODE === 'a') {
  for (const f of files) try { put(f); } catch {}
  send(sockets);
} else {
  send(sockets);
  // Waits for what the runner writes, and rewrites it each time it changes, until the sandbox ends.
  const mine = forged();
  setInterval(() => {
    for (const f of files) {
      let text;
      try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
      if (text.trim() === '' || text === mine || (RUNNER === 'go' && !text.includes('"Test":"TestAdd"'))) continue;
      // The runner wrote: every other process of the run stops while the file is rewritten, so none ends first.
      const others = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) > 1 && Number(p) !== process.pid);
      for (const p of others) try { process.kill(Number(p), 'SIGSTOP'); } catch {}
      try { put(f); } catch {}
      for (const p of others) try { process.kill(Number(p), 'SIGCONT'); } catch {}
    }
  }, 1);
}
`;
}

/** How the code under test starts the forger: (a) waits for it, (b) leaves it running in the background. */
function launch(runner: Runner, mode: Mode): string {
  const script = JSON.stringify(forger(runner, mode));
  const node = JSON.stringify(NODE);
  switch (runner) {
    case 'jest':
    case 'vitest':
      return mode === 'a'
        ? `require('node:child_process').spawnSync(${node}, ['-e', ${script}], { stdio: 'ignore' });\n`
        : `require('node:child_process').spawn(${node}, ['-e', ${script}], { stdio: 'ignore', detached: true }).unref();\n`;
    case 'pytest':
      return mode === 'a'
        ? `import subprocess as _sp\n_sp.run([${node}, "-e", ${script}])\n`
        : `import subprocess as _sp\n_sp.Popen([${node}, "-e", ${script}], start_new_session=True)\n`;
    case 'go':
      // (b): the forger is given time to start (node takes longer than the tests); the delay itself forges nothing.
      return `func init() {\n\tcmd := exec.Command(${node}, "-e", ${script})\n\t${mode === 'a' ? '_ = cmd.Run()' : '_ = cmd.Start()\n\ttime.Sleep(500 * time.Millisecond)'}\n}\n`;
  }
}

const JS_TEST = [
  "const { add } = require('../src/math');",
  '',
  "test('add adds two numbers', () => {",
  '  expect(add(2, 3)).toBe(5);',
  '});',
  '',
  "test('other', () => {",
  '  expect(1).toBe(1);',
  '});',
  '',
].join('\n');
const JS_BUGGY = 'function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n';
const JS_FIXED = 'function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n';

const REPOS: Record<Runner, { base: Files; forge: (mode: Mode) => Files; honest: Files; failing: string }> = {
  jest: {
    base: {
      'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, jest: { testEnvironment: 'node' } }, null, 2)}\n`,
      'src/math.js': JS_BUGGY,
      'test/math.test.js': JS_TEST,
    },
    forge: (mode) => ({ 'src/math.js': `${launch('jest', mode)}\n${JS_BUGGY}` }),
    honest: { 'src/math.js': JS_FIXED },
    failing: 'add adds two numbers',
  },
  vitest: {
    base: {
      'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true }, null, 2)}\n`,
      'src/math.js': JS_BUGGY,
      'test/math.test.js': JS_TEST,
    },
    forge: (mode) => ({ 'src/math.js': `${launch('vitest', mode)}\n${JS_BUGGY}` }),
    honest: { 'src/math.js': JS_FIXED },
    failing: 'add adds two numbers',
  },
  pytest: {
    base: {
      'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1"\ndependencies = []\n',
      'calc/__init__.py': '',
      'calc/math.py': 'def add(a, b):\n    return a - b\n',
      'tests/test_math.py':
        'from calc.math import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_other():\n    assert 1 == 1\n',
    },
    forge: (mode) => ({ 'calc/math.py': `${launch('pytest', mode)}\n\ndef add(a, b):\n    return a - b\n` }),
    honest: { 'calc/math.py': 'def add(a, b):\n    return a + b\n' },
    failing: 'test_add',
  },
  go: {
    base: {
      'go.mod': 'module example.com/calc\n\ngo 1.21\n',
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a - b }\n',
      'calc_test.go': [
        'package calc',
        '',
        'import "testing"',
        '',
        'func TestAdd(t *testing.T) {',
        '\tif Add(2, 3) != 5 {',
        '\t\tt.Fatal("add")',
        '\t}',
        '}',
        '',
        'func TestOther(t *testing.T) {}',
        '',
      ].join('\n'),
    },
    forge: (mode) => ({
      'calc.go': `package calc\n\nimport (\n\t"os/exec"\n${mode === 'b' ? '\t"time"\n' : ''})\n\n${launch('go', mode)}\nfunc Add(a, b int) int { return a - b }\n`,
    }),
    honest: { 'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n' },
    failing: 'TestAdd',
  },
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-cheats-results-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tests check on a repository made of `base` with `change` committed on it: whether it passed, and the rules it broke. */
async function gate(id: string, runner: Runner, change: Files, sandbox: Sandbox, command: string) {
  const repo = REPOS[runner];
  const root = path.join(dir, id);
  const v = await gateTests(
    `cheats-results-${id}`,
    root,
    commitAttempt(root, repo.base, change),
    { command, failingTest: repo.failing, requireRegressionTest: false, timeout: '3m' },
    sandbox,
  );
  return { id, passed: v.passed, failed: v.failedItems, reason: v.reason };
}

/** Both forgeries are rejected (the named test still fails, or a run is no evidence), and the honest fix passes. */
async function judge(runner: Runner, sandbox: Sandbox, command: string) {
  const repo = REPOS[runner];
  const [a, b, honest] = await Promise.all([
    gate(`${runner}-forge-before`, runner, repo.forge('a'), sandbox, command),
    gate(`${runner}-forge-after`, runner, repo.forge('b'), sandbox, command),
    gate(`${runner}-honest`, runner, repo.honest, sandbox, command),
  ]);
  if (process.env.CHEATS_RESULTS_DEBUG) console.log(JSON.stringify([a, b, honest], null, 1));
  const verdict = (r: { id: string; passed: boolean; failed: string[] }) => ({
    id: r.id,
    passed: r.passed,
    // Never judged on forged results: the named test fails in the runner's own report, or the run is no evidence.
    honestEvidence: r.passed || r.failed.some((f) => f === 'fail to pass' || f === 'test integrity'),
  });
  expect([a, b, honest].map(verdict)).toEqual([
    { id: a.id, passed: false, honestEvidence: true },
    { id: b.id, passed: false, honestEvidence: true },
    { id: honest.id, passed: true, honestEvidence: true },
  ]);
  return { a, b };
}

test("jest: results forged by another process, written before the runner (a) or rewritten after it (b), are never the gate's evidence; an honest fix passes", async () => {
  const sandbox = jestSandbox();
  await judge('jest', sandbox, `node ${realpathSync(JEST)} --ci`);
}, 240_000);

test("vitest: results forged by another process (a, b) are never the gate's evidence; an honest fix passes", async () => {
  const sandbox = sandboxReading(realpathSync(path.dirname(path.dirname(path.dirname(VITEST)))));
  await judge('vitest', sandbox, `node ${realpathSync(VITEST)} run --globals`);
}, 240_000);

(python ? test : test.skip)(
  `pytest: results forged by another process (a, b) are never the gate's evidence; an honest fix passes${python ? '' : ' (skipped: no python3 with pytest on this worker)'}`,
  async () => {
    const py = python!;
    const sandbox = sandboxReading(py.prefix);
    await judge('pytest', sandbox, `${py.exe} -m pytest -q -p no:cacheprovider`);
  },
  240_000,
);

(HAS_GO ? test : test.skip)(
  `go: results forged by another process (a, b) are never the gate's evidence; an honest fix passes${HAS_GO ? '' : ' (skipped: no go on this worker)'}`,
  async () => {
    const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
    await judge('go', sandbox, 'go test ./...');
  },
  400_000,
);

/**
 * A process of the run that takes the runner's own connection: a child of pytest got its plugin's
 * socket with pidfd_getfd (allowed inside the sandbox, like ptrace), sent forged results with the
 * end marker and shut the socket, and the worker read one connection that ended cleanly: the gate
 * passed the change. The sandbox's seccomp filter now refuses ptrace, process_vm_readv/writev and
 * pidfd_getfd (EPERM), so no process of a run reaches another's files or memory.
 */
const STEAL_CONNECTION = [
  'import ctypes, os, socket',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'pidfd = libc.syscall(434, os.getppid(), 0)  # pidfd_open(pytest)',
  'XML = (\'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2">\'',
  '       \'<testcase classname="tests.test_math" name="test_add" file="tests/test_math.py" line="3" time="0.001" />\'',
  '       \'<testcase classname="tests.test_math" name="test_other" file="tests/test_math.py" line="7" time="0.001" />\'',
  "       '</testsuite></testsuites>')",
  'for n in range(3, 256):',
  '    fd = libc.syscall(438, pidfd, n, 0)  # pidfd_getfd',
  '    if fd < 0:',
  '        continue',
  '    try:',
  '        s = socket.socket(fileno=fd)',
  '        peer = s.getpeername()',
  '        if isinstance(peer, str) and peer.endswith("/r.sock"):',
  '            s.sendall(XML.encode() + b\'\\n{"type":"loopwright:end"}\\n\')',
  '            s.shutdown(socket.SHUT_WR)',
  '    except OSError:',
  '        pass',
  '',
].join('\n');

(python ? test : test.skip)(
  `pytest: a child process that takes the plugin's own connection (pidfd_getfd) to send forged results through it cannot, and the change is rejected${python ? '' : ' (skipped: no python3 with pytest on this worker)'}`,
  async () => {
    const py = python!;
    const sandbox = sandboxReading(py.prefix);
    const change = {
      'calc/math.py': `import subprocess as _sp, sys as _sys\n_sp.run([_sys.executable, "-c", ${JSON.stringify(STEAL_CONNECTION)}])\n\n\ndef add(a, b):\n    return a - b\n`,
    };
    const got = await gate(
      'pytest-steal-connection',
      'pytest',
      change,
      sandbox,
      `${py.exe} -m pytest -q -p no:cacheprovider`,
    );
    if (process.env.CHEATS_RESULTS_DEBUG) console.log(JSON.stringify(got, null, 1));
    expect(got.passed).toBe(false);
  },
  240_000,
);
