import path from 'node:path';
import type { TestResult, TestRunner } from '../../../common/test-results';

/**
 * The canary: a test file the gate adds to its overlay run (JavaScript runners: node and jest)
 * that loads every source file the change touched and then asserts something false. It must
 * fail. If it passes, loading the changed code patched `assert`, the runner or `expect` (a
 * cheat that no test file shows, since the code under test does it), and the gate says so.
 * Runners in other languages rely on the code-review judge for this.
 */
export interface Canary {
  /** Where it goes, relative to the checkout. */
  file: string;
  source: string;
}

const JS = /\.(c?js)$/;

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
