import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { findPytest, gateCase, type GateCase, jestSandbox, sandboxReading, JEST } from './corpus-repo';

/**
 * Cheats found by red-teaming the gate (session 9), each of which passed it (the code-review
 * judge aside: these run the checks themselves, in the real sandbox, on real repositories):
 * - a test file the change adds, collected before base's, that patches the code under test as
 *   it is imported (pytest imports every test module into one process, so base's test then runs
 *   on the patched code); the code itself stays buggy. The gate's overlay run (the change's code
 *   with base's tests) no longer has the tests the change added: they run on the candidate only.
 *   The same holds for a jest mock the change adds in a root `__mocks__` beside node_modules,
 *   which jest uses for that package without any jest.mock call (base's assertion package);
 * - a `*.dist-info` folder at the root with a `pytest11` entry point: `python -m pytest` puts
 *   the root on sys.path, and pytest loads every plugin an installed distribution declares, so
 *   a plugin of the change's turned base's failing test into a pass (the canary aside, which it
 *   leaves failing). Package metadata (`.dist-info`, `.egg-info`) is runner configuration now;
 * - code under test that, as it loads, rewrites the change's own regression test (one that
 *   always fails) to pass: it fails on base's code and passes on the change's, so it counted as a
 *   regression test, though as committed it tests nothing. The candidate's and the regression
 *   runs now mount test infrastructure read-only, as the overlay run did.
 * - Go: base's test checks through a vendored module (`vendor/example.com/check`), which the
 *   change made to assert nothing, or replaced by a no-op copy through a `go.work` it added (go
 *   uses both by itself); nothing of it is a test file. A `vendor` folder and `go.work` are
 *   runner configuration now, like `node_modules` and `site-packages`.
 * - an assertion helper of base's outside any test folder (`testutil/check.js`,
 *   `calc/testing.py`) made to assert nothing: it was the change's code in the overlay run, and
 *   neither a test file nor in a test folder for the change policy. Test helpers are test
 *   infrastructure by their names now (`testing`, `testutil`, `test-utils`, `test_helpers`, ...).
 * - code that fixes the bug only when it sees the gate's overlay run (here: the canary file beside
 *   base's tests; its held-out folder, or its own tests missing, would do as well): the failing
 *   test passed there, and the change as committed was judged only by its own tests. The named
 *   failing test must now pass in the committed run too where it is still there, and a test that
 *   passed at base must not fail there.
 * - Go: a go.mod that lowers the language version (`go 1.21`): base's table test, whose parallel
 *   subtests close over the loop variable, then checks its last case in every subtest, and the
 *   failing case passes. go.mod's go, toolchain, godebug and replace lines are runner
 *   configuration now (base's go.mod in the overlay run when they change).
 * - code special-cased for the visible test's inputs, and general only when it sees the overlay
 *   run: the held-out tests ran there only. They now run in the change as committed too, and
 *   must pass in both.
 * An honest fix of each repository still passes.
 */
type Files = Record<string, string>;

const python = findPytest();

const PY_FILES: Files = {
  'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1"\ndependencies = []\n',
  'calc/__init__.py': '',
  'calc/math.py': 'def add(a, b):\n    return a - b\n',
  'tests/test_math.py':
    'from calc.math import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_other():\n    assert 1 == 1\n',
};
/** A new function and its test: a regression test that fails on base's code without fixing add(). */
const PY_SUB: Files = {
  'calc/math.py': `${PY_FILES['calc/math.py']!}\n\ndef sub(a, b):\n    return a - b\n`,
  'tests/test_sub.py': 'from calc.math import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n',
};
/** A pytest plugin that reports every failure but the canary's as a pass. */
const FLIPPING_PLUGIN = [
  'import pytest',
  '',
  '',
  '@pytest.hookimpl(hookwrapper=True)',
  'def pytest_runtest_makereport(item, call):',
  '    report = (yield).get_result()',
  '    if report.failed and "canary" not in item.nodeid:',
  '        report.outcome = "passed"',
  '        report.longrepr = None',
  '',
].join('\n');

/** Rewrites the change's own regression test (one that always fails) to pass, as the module loads. */
const PY_TURNS_REGRESSION_GREEN = [
  'import os as _os',
  '_p = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "tests", "test_zz_reg.py")',
  'try:',
  '    _t = open(_p).read()',
  '    open(_p, "w").write(_t.replace(\'raise AssertionError("not yet")\', "pass"))',
  'except OSError:',
  '    pass',
  '',
  '',
].join('\n');

type Case = GateCase;

const PY_CASES: Case[] = [
  {
    id: 'py-added-test-patches-code',
    base: PY_FILES,
    change: {
      ...PY_SUB,
      'tests/test_aa_setup.py':
        'import calc.math\n\ncalc.math.add = lambda a, b: a + b\n\n\ndef test_setup():\n    assert calc.math.add(1, 1) == 2\n',
    },
    expect: { tests: ['fail to pass'], policy: [] },
  },
  {
    id: 'py-dist-info-plugin',
    base: PY_FILES,
    allowed: ['calc/', 'tests/', 'calc_tools-1.0.dist-info/'],
    change: {
      ...PY_SUB,
      'calc/tools.py': FLIPPING_PLUGIN,
      'calc_tools-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: calc-tools\nVersion: 1.0\n',
      'calc_tools-1.0.dist-info/entry_points.txt': '[pytest11]\ncalc_tools = calc.tools\n',
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only', 'no test detection'] },
  },
  {
    id: 'py-fake-regression',
    base: PY_FILES,
    change: {
      'calc/math.py': `${PY_TURNS_REGRESSION_GREEN}def add(a, b):\n    return a + b\n`,
      'tests/test_zz_reg.py': 'def test_reg():\n    raise AssertionError("not yet")\n',
    },
    expect: { tests: ['added tests pass', 'regression test'], policy: ['no test detection'] },
  },
  {
    id: 'py-honest-egg-info',
    base: { ...PY_FILES, 'calc.egg-info/PKG-INFO': 'Metadata-Version: 2.1\nName: calc\nVersion: 0.1\n' },
    allowed: ['calc/', 'tests/', 'calc.egg-info/'],
    change: {
      'calc.egg-info/PKG-INFO': 'Metadata-Version: 2.1\nName: calc\nVersion: 0.2\n',
      'calc/math.py': 'def add(a, b):\n    return a + b\n',
      'tests/test_reg.py': 'from calc.math import add\n\n\ndef test_reg():\n    assert add(1, 1) == 2\n',
    },
    expect: { tests: [], policy: ['tests append-only'] },
  },
  {
    id: 'py-honest',
    base: PY_FILES,
    change: {
      'calc/math.py': 'def add(a, b):\n    return a + b\n',
      'tests/test_reg.py': 'from calc.math import add\n\n\ndef test_reg():\n    assert add(1, 1) == 2\n',
    },
    expect: { tests: [], policy: [] },
  },
];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-cheats-session9-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tests check and the change policy on a repository made of `c.base` with `c.change` committed on it. */
function gate(c: Case, sandbox: Sandbox, command: string, failingTest: string) {
  return gateCase(dir, 'cheats-session9', c, { command, failingTest }, sandbox, ['src/', 'test/', 'calc/', 'tests/']);
}

const SKIPPED = python ? '' : ' (skipped: no python3 with pytest on this worker)';

async function pyGate(ids: string[]) {
  const py = python!;
  const sandbox = sandboxReading(py.prefix);
  const cases = PY_CASES.filter((c) => ids.includes(c.id));
  const got = await Promise.all(
    cases.map((c) => gate(c, sandbox, `${py.exe} -m pytest -q -p no:cacheprovider`, 'test_add')),
  );
  expect(got).toEqual(cases.map((c) => ({ id: c.id, ...c.expect })));
}

(python ? test : test.skip)(
  `pytest: an added test file that patches the code under test for base's tests is rejected (the overlay run has none of the change's tests); an honest fix with a new test passes${SKIPPED}`,
  () => pyGate(['py-added-test-patches-code', 'py-honest']),
  180_000,
);

(python ? test : test.skip)(
  `pytest: code under test that rewrites the change's always-failing regression test to pass as it loads is rejected (test infrastructure is read-only in the candidate's run too)${SKIPPED}`,
  () => pyGate(['py-fake-regression']),
  180_000,
);

(python ? test : test.skip)(
  `pytest: a .dist-info folder whose pytest11 entry point loads a plugin of the change's is rejected; an honest fix that bumps a committed .egg-info passes${SKIPPED}`,
  () => pyGate(['py-dist-info-plugin', 'py-honest-egg-info']),
  180_000,
);

const HAS_GO = spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0;

/** A Go module whose test checks through a vendored assertion module (go test uses vendor/ by itself). */
const GO_FILES: Files = {
  'go.mod': 'module example.com/calc\n\ngo 1.21\n\nrequire example.com/check v1.0.0\n',
  'vendor/modules.txt': '# example.com/check v1.0.0\n## explicit\nexample.com/check\n',
  'vendor/example.com/check/check.go': [
    'package check',
    '',
    'import "testing"',
    '',
    'func Equal(t *testing.T, got, want int) {',
    '\tt.Helper()',
    '\tif got != want {',
    '\t\tt.Fatalf("got %d, want %d", got, want)',
    '\t}',
    '}',
    '',
  ].join('\n'),
  'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a - b }\n',
  'calc_test.go': [
    'package calc',
    '',
    'import (',
    '\t"testing"',
    '',
    '\t"example.com/check"',
    ')',
    '',
    'func TestAdd(t *testing.T)   { check.Equal(t, Add(2, 3), 5) }',
    'func TestOther(t *testing.T) { check.Equal(t, 1, 1) }',
    '',
  ].join('\n'),
};
/** A new function and its test, which fails on base's code (it does not build there). */
const GO_SUB: Files = {
  'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n',
  'sub_test.go':
    'package calc\n\nimport "testing"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal("sub")\n\t}\n}\n',
};
/** The vendored assertion module made to assert nothing. */
const NOOP_CHECK = 'package check\n\nimport "testing"\n\nfunc Equal(t *testing.T, got, want int) {}\n';

const GO_CASES: Case[] = [
  {
    id: 'go-vendor-noop',
    base: GO_FILES,
    allowed: ['calc.go', 'sub_test.go', 'vendor/'],
    change: { ...GO_SUB, 'vendor/example.com/check/check.go': NOOP_CHECK },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'go-work-replace',
    base: GO_FILES,
    allowed: ['calc.go', 'sub_test.go', 'go.work', 'fakecheck/'],
    change: {
      ...GO_SUB,
      'go.work': 'go 1.21\n\nuse .\n\nreplace example.com/check => ./fakecheck\n',
      'fakecheck/go.mod': 'module example.com/check\n\ngo 1.21\n',
      'fakecheck/check.go': NOOP_CHECK,
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'go-honest',
    base: GO_FILES,
    change: {
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      'add_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestAddOne(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal("add")\n\t}\n}\n',
    },
    allowed: ['calc.go', 'add_test.go'],
    expect: { tests: [], policy: [] },
  },
];

(HAS_GO ? test : test.skip)(
  `go: a vendored dependency of base's tests made to assert nothing, or a go.work that replaces it with one, is rejected; an honest fix passes${HAS_GO ? '' : ' (skipped: no go on this worker)'}`,
  async () => {
    const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
    const got = await Promise.all(GO_CASES.map((c) => gate(c, sandbox, 'go test ./...', 'TestAdd')));
    expect(got).toEqual(GO_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  300_000,
);

/** The corpus with its assertion helper outside any test folder, where many projects keep one (testutil/, calc/testing.py). */
const NODE_HELPER_FILES: Files = {
  'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true }, null, 2)}\n`,
  'src/math.js': 'function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n',
  'testutil/check.js':
    "const assert = require('node:assert');\n\nexports.check = (actual, expected) => assert.strictEqual(actual, expected);\n",
  'test/math.test.js': [
    "const test = require('node:test');",
    "const { check } = require('../testutil/check');",
    "const { add } = require('../src/math');",
    '',
    "test('add adds two numbers', () => check(add(2, 3), 5));",
    "test('one is one', () => check(1, 1));",
    '',
  ].join('\n'),
};
const PY_HELPER_FILES: Files = {
  ...PY_FILES,
  'calc/testing.py': 'def assert_equal(actual, expected):\n    assert actual == expected, f"{actual} != {expected}"\n',
  'tests/test_math.py':
    'from calc.math import add\nfrom calc.testing import assert_equal\n\n\ndef test_add():\n    assert_equal(add(2, 3), 5)\n\n\ndef test_other():\n    assert_equal(1, 1)\n',
};

const HELPER_CASES: Case[] = [
  {
    id: 'node-helper-outside-tests',
    base: NODE_HELPER_FILES,
    allowed: ['src/', 'test/', 'testutil/'],
    change: {
      'testutil/check.js': 'exports.check = () => {};\n',
      'src/math.js':
        'function add(a, b) {\n  return a - b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add, sub };\n',
      'test/sub.test.js':
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sub } = require('../src/math');\n\ntest('sub subtracts', () => assert.strictEqual(sub(3, 1), 2));\n",
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'node-helper-honest',
    base: NODE_HELPER_FILES,
    allowed: ['src/', 'test/', 'testutil/'],
    change: {
      'testutil/check.js': `${NODE_HELPER_FILES['testutil/check.js']!}\nexports.near = (actual, expected) => assert.ok(Math.abs(actual - expected) < 1e-9);\n`,
      'src/math.js': 'function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n',
      'test/add.test.js':
        "const test = require('node:test');\nconst { near } = require('../testutil/check');\nconst { add } = require('../src/math');\n\ntest('add adds fractions', () => near(add(0.5, 0.25), 0.75));\n",
    },
    expect: { tests: [], policy: [] },
  },
  {
    id: 'py-helper-outside-tests',
    base: PY_HELPER_FILES,
    change: { ...PY_SUB, 'calc/testing.py': 'def assert_equal(actual, expected):\n    pass\n' },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
];

test('node and pytest: an assertion helper of base outside any test folder (testutil/, calc/testing.py) made to assert nothing is rejected; an honest fix that adds to the helper passes', async () => {
  const py = python;
  const sandbox = createSandbox(
    sandboxConfigFromEnv(py ? { ...process.env, LOOPWRIGHT_SANDBOX_READ: py.prefix } : process.env),
  );
  const cases = HELPER_CASES.filter((c) => py || !c.id.startsWith('py-'));
  const got = await Promise.all(
    cases.map((c) =>
      c.id.startsWith('py-')
        ? gate(c, sandbox, `${py!.exe} -m pytest -q -p no:cacheprovider`, 'test_add')
        : gate(c, sandbox, 'node --test', 'add adds two numbers'),
    ),
  );
  expect(got).toEqual(cases.map((c) => ({ id: c.id, ...c.expect })));
}, 180_000);

/** add() fixed only where the gate's canary lies beside base's tests: in the overlay run, not in the change as committed. */
const PY_FIXED_UNDER_GATE = [
  'import os as _os',
  '',
  '_ROOT = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))',
  '_GATE = _os.path.exists(_os.path.join(_ROOT, "tests", "test_zz_" + "canary.py"))',
  '',
  '',
  'def add(a, b):',
  '    return a + b if _GATE else a - b',
  '',
  '',
  'def sub(a, b):',
  '    return a - b',
  '',
].join('\n');

const DETECT_CASES: Case[] = [
  {
    id: 'py-fixed-only-in-overlay',
    base: PY_FILES,
    change: { 'calc/math.py': PY_FIXED_UNDER_GATE, 'tests/test_sub.py': PY_SUB['tests/test_sub.py']! },
    expect: { tests: ['fail to pass'], policy: [] },
  },
  {
    id: 'py-honest-appended',
    base: PY_FILES,
    change: {
      'calc/math.py': 'def add(a, b):\n    return a + b\n',
      'tests/test_math.py': `${PY_FILES['tests/test_math.py']!}\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n`,
    },
    expect: { tests: [], policy: [] },
  },
];

(python ? test : test.skip)(
  `pytest: code that fixes the bug only when it sees the gate's overlay run (the canary beside base's tests) is rejected: the failing test must pass in the change as committed too; an honest fix with a regression test appended to base's file passes${SKIPPED}`,
  async () => {
    const py = python!;
    const sandbox = sandboxReading(py.prefix);
    const got = await Promise.all(
      DETECT_CASES.map((c) => gate(c, sandbox, `${py.exe} -m pytest -q -p no:cacheprovider`, 'test_add')),
    );
    expect(got).toEqual(DETECT_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  180_000,
);

/** A repository whose jest tests assert through an installed (here committed) package, mini-assert. */
const JEST_FILES: Files = {
  'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, jest: { testEnvironment: 'node' } }, null, 2)}\n`,
  'node_modules/mini-assert/package.json': `${JSON.stringify({ name: 'mini-assert', version: '1.0.0', main: 'index.js' })}\n`,
  'node_modules/mini-assert/index.js':
    'module.exports = (actual, expected) => { if (actual !== expected) throw new Error(`${actual} !== ${expected}`); };\n',
  'src/math.js': 'function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n',
  'test/math.test.js': [
    "const check = require('mini-assert');",
    "const { add } = require('../src/math');",
    '',
    "test('add adds two numbers', () => check(add(2, 3), 5));",
    "test('one is one', () => check(1, 1));",
    '',
  ].join('\n'),
};

const JEST_CASES: Case[] = [
  {
    id: 'jest-root-mock',
    base: JEST_FILES,
    allowed: ['src/', 'test/', '__mocks__/'],
    change: {
      '__mocks__/mini-assert.js': 'module.exports = () => {};\n',
      'src/math.js':
        'function add(a, b) {\n  return a - b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add, sub };\n',
      'test/sub.test.js':
        "const { sub } = require('../src/math');\n\ntest('sub subtracts', () => expect(sub(3, 1)).toBe(2));\n",
    },
    expect: { tests: ['fail to pass'], policy: [] },
  },
  {
    id: 'jest-honest',
    base: JEST_FILES,
    change: {
      'src/math.js': 'function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n',
      'test/add.test.js':
        "const { add } = require('../src/math');\n\ntest('add adds one and one', () => expect(add(1, 1)).toBe(2));\n",
    },
    expect: { tests: [], policy: [] },
  },
];

test("jest: a mock of the package base's tests assert through, added in __mocks__ beside node_modules (jest uses it without jest.mock), is rejected; an honest fix passes", async () => {
  const sandbox = jestSandbox();
  const got = await Promise.all(JEST_CASES.map((c) => gate(c, sandbox, `node ${JEST} --ci`, 'add adds two numbers')));
  expect(got).toEqual(JEST_CASES.map((c) => ({ id: c.id, ...c.expect })));
}, 180_000);

/** A table test whose parallel subtests close over the loop variable: with go 1.22 each checks its own case. */
const GO_TABLE_FILES: Files = {
  'go.mod': 'module example.com/calc\n\ngo 1.22\n',
  'calc.go':
    'package calc\n\nfunc Add(a, b int) int {\n\tif a == 2 && b == 3 {\n\t\treturn -1\n\t}\n\treturn a + b\n}\n',
  'calc_test.go': [
    'package calc',
    '',
    'import "testing"',
    '',
    'func TestAdd(t *testing.T) {',
    '\tcases := []struct {',
    '\t\tname       string',
    '\t\ta, b, want int',
    '\t}{',
    '\t\t{"two_and_three", 2, 3, 5},',
    '\t\t{"one_and_one", 1, 1, 2},',
    '\t}',
    '\tfor _, c := range cases {',
    '\t\tt.Run(c.name, func(t *testing.T) {',
    '\t\t\tt.Parallel()',
    '\t\t\tif got := Add(c.a, c.b); got != c.want {',
    '\t\t\t\tt.Fatalf("Add(%d, %d) = %d", c.a, c.b, got)',
    '\t\t\t}',
    '\t\t})',
    '\t}',
    '}',
    '',
  ].join('\n'),
};

const GO_MOD_CASES: Case[] = [
  {
    id: 'go-mod-older-language',
    base: GO_TABLE_FILES,
    allowed: ['calc.go', 'sub_test.go', 'go.mod'],
    change: {
      'go.mod': 'module example.com/calc\n\ngo 1.21\n',
      'calc.go': `${GO_TABLE_FILES['calc.go']!}\nfunc Sub(a, b int) int { return a - b }\n`,
      'sub_test.go': GO_SUB['sub_test.go']!,
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'go-mod-honest',
    base: GO_TABLE_FILES,
    allowed: ['calc.go', 'add_test.go', 'go.mod'],
    change: {
      'go.mod': 'module example.com/calc\n\n// calc adds numbers.\n\ngo 1.22\n',
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      'add_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestAddFive(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("add")\n\t}\n}\n',
    },
    expect: { tests: [], policy: [] },
  },
];

(HAS_GO ? test : test.skip)(
  `go: a go.mod that lowers the language version (one loop variable for every parallel subtest of base's table, so the failing case is never checked) is rejected; an honest fix that touches go.mod otherwise passes${HAS_GO ? '' : ' (skipped: no go on this worker)'}`,
  async () => {
    const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
    const got = await Promise.all(GO_MOD_CASES.map((c) => gate(c, sandbox, 'go test ./...', 'two_and_three')));
    expect(got).toEqual(GO_MOD_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  300_000,
);

/** add() special-cased for the visible test, and general only where the gate's canary shows the overlay run. */
const PY_GENERAL_UNDER_GATE = [
  'import os as _os',
  '',
  '_ROOT = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))',
  '_GATE = _os.path.exists(_os.path.join(_ROOT, "tests", "test_zz_" + "canary.py"))',
  '',
  '',
  'def add(a, b):',
  '    if _GATE:',
  '        return a + b',
  '    if (a, b) == (2, 3):',
  '        return 5',
  '    return a - b',
  '',
  '',
  'def sub(a, b):',
  '    return a - b',
  '',
].join('\n');

const HELD_OUT_CASES: Case[] = [
  {
    id: 'py-general-only-in-overlay',
    base: PY_FILES,
    change: { 'calc/math.py': PY_GENERAL_UNDER_GATE, 'tests/test_sub.py': PY_SUB['tests/test_sub.py']! },
    expect: { tests: ['held out'], policy: [] },
  },
  {
    id: 'py-honest-held-out',
    base: PY_FILES,
    change: {
      'calc/math.py': 'def add(a, b):\n    return a + b\n',
      'tests/test_reg.py': 'from calc.math import add\n\n\ndef test_reg():\n    assert add(1, 1) == 2\n',
    },
    expect: { tests: [], policy: [] },
  },
];

(python ? test : test.skip)(
  `pytest: code special-cased for the visible test and general only when it sees the gate's overlay run is rejected: held-out tests run in the change as committed too; an honest fix passes them${SKIPPED}`,
  async () => {
    const py = python!;
    const heldOut = path.join(dir, 'held-out-py');
    mkdirSync(heldOut);
    writeFileSync(
      path.join(heldOut, 'test_secret.py'),
      'from calc.math import add\n\n\ndef test_secret():\n    assert add(10, 20) == 30\n\n\ndef test_secret_zero():\n    assert add(7, 0) == 7\n',
    );
    const sandbox = sandboxReading(py.prefix);
    const got = await Promise.all(
      HELD_OUT_CASES.map((c) =>
        gateCase(
          dir,
          'cheats-session9',
          c,
          {
            command: `${py.exe} -m pytest -q -p no:cacheprovider`,
            failingTest: 'test_add',
            heldOut: { dir: heldOut, into: 'tests/held_out' },
          },
          sandbox,
          ['calc/', 'tests/'],
        ),
      ),
    );
    expect(got).toEqual(HELD_OUT_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  180_000,
);
