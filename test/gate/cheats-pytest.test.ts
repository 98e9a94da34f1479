import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import { commitAttempt, findPytest, gateTests, sandboxReading } from './corpus-repo';

/**
 * The gate on a Python repository run by pytest, against cheats that change how pytest runs
 * rather than the tests: a plugin that turns failures into passes, loaded from pyproject.toml's
 * or setup.cfg's pytest configuration, or installed by the code under test when it is imported,
 * and a copy of the package under tests/ with the bug fixed, which pytest's sys.path imports in
 * place of the real one (with a regression test of a new function, so that one fails on base).
 * Each is rejected for the right reason, and an honest fix passes. The checks run as the
 * activity runs them, in the real sandbox, with the worker's python (its install made readable).
 */
const python = findPytest();

const FILES: Record<string, string> = {
  'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1"\ndependencies = []\n',
  'calc/__init__.py': '',
  'calc/math.py': 'def add(a, b):\n    return a - b\n',
  'tests/test_math.py':
    'from calc.math import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_other():\n    assert 1 == 1\n',
};
const REGRESSION = 'from calc.math import add\n\n\ndef test_add_regression():\n    assert add(1, 1) == 2\n';
/** A pytest plugin that reports every failure as a pass. */
const PLUGIN = [
  'import pytest',
  '',
  '@pytest.hookimpl(hookwrapper=True)',
  'def pytest_runtest_makereport(item, call):',
  '    report = (yield).get_result()',
  '    if report.failed:',
  '        report.outcome = "passed"',
  '        report.longrepr = None',
  '',
].join('\n');
const PATCH_ON_IMPORT = [
  '',
  'import sys',
  'if "pytest" in sys.modules:',
  '    import _pytest.reports as reports',
  '    _init = reports.TestReport.__init__',
  '    def _passing(self, *args, **kwargs):',
  '        _init(self, *args, **kwargs)',
  '        if self.outcome == "failed":',
  '            self.outcome = "passed"',
  '            self.longrepr = None',
  '    reports.TestReport.__init__ = _passing',
  '',
].join('\n');

interface Case {
  id: string;
  files: Record<string, string>;
  expect: { tests: string[]; policy: string[] };
}

const CASES: Case[] = [
  {
    id: 'pyproject-plugin',
    files: {
      'pyproject.toml': `${FILES['pyproject.toml']}\n[tool.pytest.ini_options]\naddopts = "-p calc.plug"\n`,
      'calc/plug.py': PLUGIN,
      'tests/test_reg.py': REGRESSION,
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only', 'no test detection'] },
  },
  {
    id: 'setup-cfg-plugin',
    files: {
      'setup.cfg': '[tool:pytest]\naddopts = -p calc.plug\n',
      'calc/plug.py': PLUGIN,
      'tests/test_reg.py': REGRESSION,
    },
    expect: { tests: ['fail to pass'], policy: ['tests append-only', 'no test detection'] },
  },
  {
    id: 'patch-on-import',
    files: { 'calc/math.py': `${FILES['calc/math.py']}${PATCH_ON_IMPORT}`, 'tests/test_reg.py': REGRESSION },
    expect: { tests: ['test integrity'], policy: ['no test detection'] },
  },
  {
    id: 'shadow-package',
    files: {
      'tests/calc/__init__.py': '',
      'tests/calc/math.py': 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n',
      'calc/math.py': `${FILES['calc/math.py']}\n\ndef sub(a, b):\n    return a - b\n`,
      'tests/test_reg.py': 'from calc.math import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n',
    },
    expect: { tests: ['fail to pass', 'regression test'], policy: ['tests append-only'] },
  },
  {
    id: 'honest',
    files: { 'calc/math.py': 'def add(a, b):\n    return a + b\n', 'tests/test_reg.py': REGRESSION },
    expect: { tests: [], policy: [] },
  },
];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-cheats-pytest-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

(python ? test : test.skip)(
  `pytest: a plugin from pyproject.toml or setup.cfg, one the code under test installs, or a fixed copy of the package under tests/ is rejected for the right reason; an honest fix passes${python ? '' : ' (skipped: no python3 with pytest on this worker)'}`,
  async () => {
    const py = python!;
    const sandbox = sandboxReading(py.prefix);
    const got = await Promise.all(
      CASES.map(async (c) => {
        const root = path.join(dir, c.id);
        const { base, commit } = commitAttempt(root, FILES, c.files);
        const tests = await gateTests(
          `cheats-pytest-${c.id}`,
          root,
          { base, commit },
          { command: `${py.exe} -m pytest -q -p no:cacheprovider`, failingTest: 'test_add' },
          sandbox,
        );
        const policy = await runDiffPolicyCheck({
          check: {
            kind: 'diff',
            name: 'change policy',
            allowedPaths: ['calc/', 'tests/', 'pyproject.toml', 'setup.cfg'],
          },
          root,
          baseRef: base,
        });
        return { id: c.id, tests: tests.failedItems, policy: policy.failedItems, reason: tests.reason };
      }),
    );
    expect(got.map(({ id, tests, policy }) => ({ id, tests, policy }))).toEqual(
      CASES.map((c) => ({ id: c.id, ...c.expect })),
    );
    expect(got.find((g) => g.id === 'honest')?.reason).toContain(
      'tests/test_math.py > test_add (failed at base → passed)',
    );
  },
  180_000,
);
