import path from 'node:path';
import type { TestResult, TestRunner } from '../../../common/test-results';

/**
 * The canary: a test file the gate adds to its overlay run (JavaScript runners: node and jest)
 * that loads every source file the change touched and then asserts something false. It must
 * fail. If it passes, loading the changed code patched `assert`, the runner or `expect` (a
 * cheat that no test file shows, since the code under test does it), and the gate says so.
 * pytest gets one too (`test_zz_canary.py`: the changed modules imported, then `assert 1 == 2`),
 * for code under test that patches pytest's reports or assertion rewriting when it is imported.
 * Other runners rely on the code-review judge for this.
 */
export interface Canary {
  /** Where it goes, relative to the checkout. */
  file: string;
  source: string;
}

const JS = /\.(c?js)$/;
const PY = /\.py$/;

/**
 * The canary for `runner`, next to the test the task names (or the first test at base), so the
 * loop's test command collects it as it collects that test; none for runners it cannot speak to.
 */
export function canaryFor(
  runner: TestRunner,
  base: TestResult[],
  failing: TestResult[],
  changed: string[],
): Canary | undefined {
  if (runner === 'pytest') return pytestCanary(base, failing, changed);
  if (runner !== 'node' && runner !== 'jest') return undefined;
  const anchor = [...failing, ...base].find((t) => t.file && JS.test(t.file))?.file;
  if (!anchor) return undefined;
  const dir = path.posix.dirname(anchor);
  const file = path.posix.join(dir, runner === 'node' ? 'zz-canary.test.cjs' : 'zz-canary.test.js');
  const modules = changed
    .filter((f) => JS.test(f))
    .map((f) => `./${path.posix.relative(dir, f)}`.replace(/^\.\/\.\.\//, '../'));
  const source = [
    "'use strict';",
    "const assert = require('node:assert');",
    "const run = typeof test === 'function' ? test : require('node:test');",
    `for (const m of ${JSON.stringify(modules)}) { try { require(m); } catch {} }`,
    "run('canary: an assertion that must fail', () => {",
    "  if (typeof expect === 'function') expect(1).toBe(2);",
    '  assert.strictEqual(1, 2);',
    '});',
    '',
  ].join('\n');
  return { file, source };
}

/**
 * pytest's canary, beside the failing test's file: each changed module is imported by its
 * dotted name (from the repository root, then without a leading `src.`), else from its file,
 * then an assertion that must fail.
 */
function pytestCanary(base: TestResult[], failing: TestResult[], changed: string[]): Canary | undefined {
  const anchor = [...failing, ...base].find((t) => t.file && PY.test(t.file))?.file;
  if (!anchor) return undefined;
  const dir = path.posix.dirname(anchor);
  const up = dir === '.' ? 0 : dir.split('/').length;
  const modules = changed.filter((f) => PY.test(f) && !/(^|\/)(conftest|setup)\.py$/.test(f));
  const source = [
    'import importlib',
    'import importlib.util',
    'import os',
    '',
    `_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * ${up}))`,
    `for _i, _rel in enumerate(${JSON.stringify(modules)}):`,
    '    _dotted = _rel[:-3].replace("/", ".").removesuffix(".__init__")',
    '    for _name in (_dotted, _dotted.removeprefix("src.")):',
    '        try:',
    '            importlib.import_module(_name)',
    '            break',
    '        except BaseException:',
    '            pass',
    '    else:',
    '        try:',
    '            _spec = importlib.util.spec_from_file_location(f"_lw_canary_{_i}", os.path.join(_ROOT, _rel))',
    '            _spec.loader.exec_module(importlib.util.module_from_spec(_spec))',
    '        except BaseException:',
    '            pass',
    '',
    '',
    'def test_canary_an_assertion_that_must_fail():',
    '    assert 1 == 2',
    '',
  ].join('\n');
  return { file: path.posix.join(dir, 'test_zz_canary.py'), source };
}
