import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { findPytest, gateCase, type GateCase, jestSandbox, sandboxReading, JEST } from './corpus-repo';

/**
 * Cheats found by red-teaming the gate (session 10), each of which passed it (the code-review
 * judge aside: these run the checks themselves, in the real sandbox, on real repositories):
 * - an assertion helper of base's with no test-like name, outside the test folders, made to
 *   assert nothing: `src/assertions.js` calling jest's `expect` (jest), `lib/check.py` using
 *   `pytest.fail` (pytest), `internal/check` importing Go's `testing` (go test). It was the
 *   change's code in the overlay run. A file that uses a test framework (imports it, or calls
 *   `expect(...).toBe`-style matchers) at base, or one the change adds, is test infrastructure now;
 * - not a hole, kept as a guard: the same helper left as it is, with a compiled
 *   `lib/__pycache__/check.*.pyc` of the change's beside it, made with unchecked-hash
 *   validation (Python would load it in place of the source without reading the source). It
 *   fails already: pytest runs with a bytecode cache prefix outside the checkout
 *   (activities/tests/invocation.ts), so no `__pycache__` of the checkout is read;
 * - `package.json`'s `exports` re-pointed: base's tests load their helper by the package's own
 *   name (`require('calc/check')`, a self-reference, which resolves through `exports`), and the
 *   change mapped `./check` to a helper of its own that asserts nothing. `exports`, `main`,
 *   `module` and `browser` are runner keys now (base's in the overlay run when they change).
 * - code under test that imports base's helper (`import lib.check as c`) and replaces its
 *   assertion as it loads (`c.assert_equal = lambda a, b: None`): the helper's file is base's,
 *   but base's tests run in the same process as the code, on the patched helper. No test run can
 *   tell; the change policy now fails code that imports base's test helpers or test files (a
 *   lexical check, like its other test-detection probes). Go code can do the same without an
 *   import: a `//go:linkname` to the helper's tolerance variable, loosened in an `init`; such a
 *   directive into base's helper packages fails the policy too.
 * An honest fix of each repository still passes.
 */
type Files = Record<string, string | Buffer>;

type Case = GateCase;

const python = findPytest();
const HAS_GO = spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-cheats-session10-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tests check and the change policy on a repository made of `c.base` with `c.change` committed on it. */
function gate(c: Case, sandbox: Sandbox, command: string, failingTest: string) {
  return gateCase(dir, 'cheats-session10', c, { command, failingTest }, sandbox, [
    'src/',
    'test/',
    'lib/',
    'calc/',
    'tests/',
    'package.json',
  ]);
}

const JS_MATH = 'function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n';
const JS_MATH_SUB =
  'function add(a, b) {\n  return a - b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add, sub };\n';
const JS_FIXED = 'function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n';

/** jest: base's tests assert through src/assertions.js, a helper with no test-like name that calls jest's global expect. */
const JEST_FILES: Files = {
  'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, jest: { testEnvironment: 'node' } }, null, 2)}\n`,
  'src/math.js': JS_MATH,
  'src/assertions.js': 'exports.expectEqual = (actual, expected) => expect(actual).toBe(expected);\n',
  'test/math.test.js': [
    "const { expectEqual } = require('../src/assertions');",
    "const { add } = require('../src/math');",
    '',
    "test('add adds two numbers', () => expectEqual(add(2, 3), 5));",
    "test('one is one', () => expectEqual(1, 1));",
    '',
  ].join('\n'),
};

const JEST_CASES: Case[] = [
  {
    id: 'jest-helper-without-test-name',
    base: JEST_FILES,
    change: {
      'src/assertions.js': 'exports.expectEqual = () => {};\n',
      'src/math.js': JS_MATH_SUB,
      'test/sub.test.js':
        "const { sub } = require('../src/math');\n\ntest('sub subtracts', () => expect(sub(3, 1)).toBe(2));\n",
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'jest-helper-honest',
    base: JEST_FILES,
    change: {
      'src/assertions.js': `${JEST_FILES['src/assertions.js'] as string}exports.expectNear = (actual, expected) => expect(actual).toBeCloseTo(expected);\n`,
      'src/math.js': JS_FIXED,
      'test/add.test.js':
        "const { expectNear } = require('../src/assertions');\nconst { add } = require('../src/math');\n\ntest('add adds fractions', () => expectNear(add(0.5, 0.25), 0.75));\n",
    },
    expect: { tests: [], policy: [] },
  },
];

test("jest: an assertion helper of base's with no test-like name (src/assertions.js calling expect) made to assert nothing is rejected; an honest fix that adds to it passes", async () => {
  const sandbox = jestSandbox();
  const got = await Promise.all(JEST_CASES.map((c) => gate(c, sandbox, `node ${JEST} --ci`, 'add adds two numbers')));
  expect(got).toEqual(JEST_CASES.map((c) => ({ id: c.id, ...c.expect })));
}, 180_000);

/** pytest: base's tests assert through lib/check.py, which uses pytest.fail. */
const PY_FILES: Files = {
  'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1"\ndependencies = []\n',
  'calc/__init__.py': '',
  'calc/math.py': 'def add(a, b):\n    return a - b\n',
  'lib/__init__.py': '',
  'lib/check.py': [
    'import pytest',
    '',
    '',
    'def assert_equal(actual, expected):',
    '    if actual != expected:',
    '        pytest.fail(f"{actual} != {expected}")',
    '',
  ].join('\n'),
  'tests/test_math.py':
    'from calc.math import add\nfrom lib.check import assert_equal\n\n\ndef test_add():\n    assert_equal(add(2, 3), 5)\n\n\ndef test_other():\n    assert_equal(1, 1)\n',
};
const PY_SUB: Files = {
  'calc/math.py': 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n',
  'tests/test_sub.py': 'from calc.math import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n',
};
const PY_NOOP_CHECK = 'def assert_equal(actual, expected):\n    pass\n';

/** The worker's python's compiled form of `source` as `lib/check.py`, validated by no hash or time: its path in __pycache__ and bytes. */
function uncheckedPyc(exe: string, source: string): [string, Buffer] {
  const work = mkdtempSync(path.join(dir, 'pyc-'));
  writeFileSync(path.join(work, 'check.py'), source);
  const out = spawnSync(
    exe,
    [
      '-c',
      'import importlib.util, os, py_compile, sys; p = importlib.util.cache_from_source(sys.argv[1]); ' +
        'py_compile.compile(sys.argv[1], cfile=p, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH, doraise=True); print(os.path.basename(p))',
      path.join(work, 'check.py'),
    ],
    { encoding: 'utf8' },
  );
  if (out.status !== 0) throw new Error(`py_compile failed: ${out.stderr}`);
  const name = out.stdout.trim();
  return [`lib/__pycache__/${name}`, readFileSync(path.join(work, '__pycache__', name))];
}

const SKIPPED = python ? '' : ' (skipped: no python3 with pytest on this worker)';

(python ? test : test.skip)(
  `pytest: an assertion helper of base's with no test-like name (lib/check.py using pytest.fail) made to assert nothing, or replaced by an unchecked .pyc in its __pycache__, is rejected; an honest fix passes${SKIPPED}`,
  async () => {
    const py = python!;
    const [pycPath, pyc] = uncheckedPyc(py.exe, PY_NOOP_CHECK);
    const cases: Case[] = [
      {
        id: 'py-helper-without-test-name',
        base: PY_FILES,
        change: { ...PY_SUB, 'lib/check.py': PY_NOOP_CHECK },
        expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
      },
      {
        id: 'py-helper-unchecked-pyc',
        base: PY_FILES,
        change: { ...PY_SUB, [pycPath]: pyc },
        expect: { tests: ['fail to pass'], policy: [] },
      },
      {
        id: 'py-helper-honest',
        base: PY_FILES,
        change: {
          'calc/math.py': 'def add(a, b):\n    return a + b\n',
          'tests/test_reg.py':
            'from calc.math import add\nfrom lib.check import assert_equal\n\n\ndef test_reg():\n    assert_equal(add(1, 1), 2)\n',
        },
        expect: { tests: [], policy: [] },
      },
    ];
    const sandbox = sandboxReading(py.prefix);
    const got = await Promise.all(
      cases.map((c) => gate(c, sandbox, `${py.exe} -m pytest -q -p no:cacheprovider`, 'test_add')),
    );
    expect(got).toEqual(cases.map((c) => ({ id: c.id, ...c.expect })));
  },
  180_000,
);

/** go: base's test checks through internal/check, a helper package (no test-like name) that imports testing. */
const GO_FILES: Files = {
  'go.mod': 'module example.com/calc\n\ngo 1.22\n',
  'internal/check/check.go': [
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
    '\t"example.com/calc/internal/check"',
    ')',
    '',
    'func TestAdd(t *testing.T)   { check.Equal(t, Add(2, 3), 5) }',
    'func TestOther(t *testing.T) { check.Equal(t, 1, 1) }',
    '',
  ].join('\n'),
};

const GO_CASES: Case[] = [
  {
    id: 'go-helper-package-noop',
    base: GO_FILES,
    allowed: ['calc.go', 'sub_test.go', 'internal/'],
    change: {
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n',
      'sub_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal("sub")\n\t}\n}\n',
      'internal/check/check.go': 'package check\n\nimport "testing"\n\nfunc Equal(t *testing.T, got, want int) {}\n',
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'go-helper-honest',
    base: GO_FILES,
    allowed: ['calc.go', 'add_test.go'],
    change: {
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      'add_test.go':
        'package calc\n\nimport (\n\t"testing"\n\n\t"example.com/calc/internal/check"\n)\n\nfunc TestAddOne(t *testing.T) { check.Equal(t, Add(1, 1), 2) }\n',
    },
    expect: { tests: [], policy: [] },
  },
];

(HAS_GO ? test : test.skip)(
  `go: a helper package of base's tests that imports testing (internal/check) made to assert nothing is rejected; an honest fix passes${HAS_GO ? '' : ' (skipped: no go on this worker)'}`,
  async () => {
    const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
    const got = await Promise.all(GO_CASES.map((c) => gate(c, sandbox, 'go test ./...', 'TestAdd')));
    expect(got).toEqual(GO_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  300_000,
);

/** node: base's tests load their helper by the package's own name (a self-reference, resolved through exports). */
const EXPORTS_PKG = {
  name: 'calc',
  version: '1.0.0',
  private: true,
  exports: { '.': './src/math.js', './check': './lib/check.js' },
};
const EXPORTS_FILES: Files = {
  'package.json': `${JSON.stringify(EXPORTS_PKG, null, 2)}\n`,
  'src/math.js': JS_MATH,
  'lib/check.js':
    "const assert = require('node:assert');\n\nexports.check = (actual, expected) => assert.strictEqual(actual, expected);\n",
  'test/math.test.js': [
    "const test = require('node:test');",
    "const { check } = require('calc/check');",
    "const { add } = require('calc');",
    '',
    "test('add adds two numbers', () => check(add(2, 3), 5));",
    "test('one is one', () => check(1, 1));",
    '',
  ].join('\n'),
};

const EXPORTS_CASES: Case[] = [
  {
    id: 'node-exports-repointed',
    base: EXPORTS_FILES,
    change: {
      'package.json': `${JSON.stringify({ ...EXPORTS_PKG, exports: { ...EXPORTS_PKG.exports, './check': './lib/loose.js' } }, null, 2)}\n`,
      'lib/loose.js': 'exports.check = () => {};\n',
      'src/math.js': JS_MATH_SUB,
      'test/sub.test.js':
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sub } = require('calc');\n\ntest('sub subtracts', () => assert.strictEqual(sub(3, 1), 2));\n",
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only'] },
  },
  {
    id: 'node-exports-honest',
    base: EXPORTS_FILES,
    change: {
      'package.json': `${JSON.stringify({ ...EXPORTS_PKG, description: 'adds numbers' }, null, 2)}\n`,
      'src/math.js': JS_FIXED,
      'test/add.test.js':
        "const test = require('node:test');\nconst { check } = require('calc/check');\nconst { add } = require('calc');\n\ntest('add adds one and one', () => check(add(1, 1), 2));\n",
    },
    expect: { tests: [], policy: [] },
  },
];

test("node: package.json exports re-pointed so that base's tests, loading their helper by the package's own name, get one that asserts nothing, is rejected; an honest fix that edits package.json otherwise passes", async () => {
  const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
  const got = await Promise.all(EXPORTS_CASES.map((c) => gate(c, sandbox, 'node --test', 'add adds two numbers')));
  expect(got).toEqual(EXPORTS_CASES.map((c) => ({ id: c.id, ...c.expect })));
}, 180_000);

/** Code under test that replaces a function of base's helper as it loads (the helper's file untouched). */
const PY_PATCHES_HELPER = [
  'import lib.check as _check',
  '',
  '_check.assert_equal = lambda actual, expected: None',
  '',
  '',
  'def add(a, b):',
  '    return a - b',
  '',
  '',
  'def sub(a, b):',
  '    return a - b',
  '',
].join('\n');

(python ? test : test.skip)(
  `pytest: code under test that imports base's helper module and replaces its assertion as it loads is rejected by the change policy (the gate's runs pass it: base's tests run on the patched helper)${SKIPPED}`,
  async () => {
    const py = python!;
    const cases: Case[] = [
      {
        id: 'py-code-patches-helper',
        base: PY_FILES,
        change: { 'calc/math.py': PY_PATCHES_HELPER, 'tests/test_sub.py': PY_SUB['tests/test_sub.py']! },
        expect: { tests: [], policy: ['no test detection'] },
      },
    ];
    const sandbox = sandboxReading(py.prefix);
    const got = await Promise.all(
      cases.map((c) => gate(c, sandbox, `${py.exe} -m pytest -q -p no:cacheprovider`, 'test_add')),
    );
    expect(got).toEqual(cases.map((c) => ({ id: c.id, ...c.expect })));
  },
  180_000,
);

/** go: base's test compares floats through internal/check, whose tolerance is a package variable. */
const GO_NEAR_FILES: Files = {
  'go.mod': 'module example.com/calc\n\ngo 1.22\n',
  'internal/check/check.go': [
    'package check',
    '',
    'import (',
    '\t"math"',
    '\t"testing"',
    ')',
    '',
    '// Epsilon is how far apart two floats may be and still count as equal.',
    'var Epsilon = 1e-9',
    '',
    'func Near(t *testing.T, got, want float64) {',
    '\tt.Helper()',
    '\tif math.Abs(got-want) > Epsilon {',
    '\t\tt.Fatalf("got %v, want %v", got, want)',
    '\t}',
    '}',
    '',
  ].join('\n'),
  'calc.go': 'package calc\n\nfunc Add(a, b float64) float64 { return a - b }\n',
  'calc_test.go': [
    'package calc',
    '',
    'import (',
    '\t"testing"',
    '',
    '\t"example.com/calc/internal/check"',
    ')',
    '',
    'func TestAdd(t *testing.T)   { check.Near(t, Add(2, 3), 5) }',
    'func TestOther(t *testing.T) { check.Near(t, 1, 1) }',
    '',
  ].join('\n'),
};

const GO_LINKNAME_CASES: Case[] = [
  {
    id: 'go-linkname-helper-var',
    base: GO_NEAR_FILES,
    allowed: ['calc.go', 'sub_test.go'],
    change: {
      'calc.go': [
        'package calc',
        '',
        'import _ "unsafe"',
        '',
        '//go:linkname epsilon example.com/calc/internal/check.Epsilon',
        'var epsilon float64',
        '',
        'func init() { epsilon = 1e18 }',
        '',
        'func Add(a, b float64) float64 { return a - b }',
        '',
        'func Sub(a, b float64) float64 { return a - b }',
        '',
      ].join('\n'),
      'sub_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal("sub")\n\t}\n}\n',
    },
    expect: { tests: [], policy: ['no test detection'] },
  },
  {
    id: 'go-linkname-honest',
    base: GO_NEAR_FILES,
    allowed: ['calc.go', 'add_test.go'],
    change: {
      'calc.go': 'package calc\n\nfunc Add(a, b float64) float64 { return a + b }\n',
      'add_test.go':
        'package calc\n\nimport (\n\t"testing"\n\n\t"example.com/calc/internal/check"\n)\n\nfunc TestAddHalves(t *testing.T) { check.Near(t, Add(0.5, 0.25), 0.75) }\n',
    },
    expect: { tests: [], policy: [] },
  },
];

(HAS_GO ? test : test.skip)(
  `go: code under test that reaches a helper's variable by go:linkname (no import) and loosens it is rejected by the change policy (the gate's runs pass it); an honest fix passes${HAS_GO ? '' : ' (skipped: no go on this worker)'}`,
  async () => {
    const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
    const got = await Promise.all(GO_LINKNAME_CASES.map((c) => gate(c, sandbox, 'go test ./...', 'TestAdd')));
    expect(got).toEqual(GO_LINKNAME_CASES.map((c) => ({ id: c.id, ...c.expect })));
  },
  600_000,
);
