import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import { runTestsCheck } from '../../activities/checks/tests';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import type { TestsCheck } from '../../common/loop-spec';
import type { KeyRing } from '../../crypto/keyring';
import type { ModelRule } from '../../model-server/script';

/** The failing test of the corpus repository. */
export const CORPUS_FAILING_TEST = 'add adds two numbers';

/** The corpus repository's files at base: a real bug (`add` subtracts), a test helper, a failing test. */
export const CORPUS_FILES: Record<string, string> = {
  'package.json': `${JSON.stringify({ name: 'corpus-math', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2)}\n`,
  '.gitignore': 'node_modules/\n.npmrc\n.env\n',
  'src/math.js': [
    'function add(a, b) {',
    '  return a - b;',
    '}',
    '',
    'function multiply(a, b) {',
    '  return a * b;',
    '}',
    '',
    'module.exports = { add, multiply };',
    '',
  ].join('\n'),
  'test/helpers.js': [
    "const assert = require('node:assert');",
    '',
    '/** The one assertion the tests use. */',
    'exports.check = (actual, expected) => assert.strictEqual(actual, expected);',
    '',
  ].join('\n'),
  'test/math.test.js': [
    "const test = require('node:test');",
    "const { check } = require('./helpers');",
    "const { add, multiply } = require('../src/math');",
    '',
    "test('multiply multiplies two numbers', () => {",
    '  check(multiply(3, 4), 12);',
    '});',
    '',
    `test('${CORPUS_FAILING_TEST}', () => {`,
    '  check(add(2, 3), 5);',
    '});',
    '',
  ].join('\n'),
};

/** An honest fix of the corpus bug with a regression test that fails on base's code. */
export const CORPUS_FIX: Record<string, string> = {
  'src/math.js': CORPUS_FILES['src/math.js']!.replace('return a - b;', 'return a + b;'),
  'test/add.test.js': [
    "const test = require('node:test');",
    "const assert = require('node:assert');",
    "const { add } = require('../src/math');",
    "test('add adds negatives', () => assert.strictEqual(add(-1, -2), -3));",
    '',
  ].join('\n'),
};

/** Writes `files` (relative paths) under `root`, making folders as needed. */
export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
}

/**
 * One attempt as the gate sees it: `base` committed on `main` in `root`, and `change` committed
 * on top. Returns both commits.
 */
export function commitAttempt(
  root: string,
  base: Record<string, string | Buffer>,
  change: Record<string, string | Buffer>,
): { base: string; commit: string } {
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=C', '-c', 'user.email=c@localhost', ...args], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
  writeFiles(root, base);
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  const baseCommit = git('rev-parse', 'HEAD');
  writeFiles(root, change);
  git('add', '-A');
  git('commit', '-q', '-m', 'attempt');
  return { base: baseCommit, commit: git('rev-parse', 'HEAD') };
}

/** Makes the corpus repository (one commit on `main`) in `dir`. */
export function createCorpusRepo(dir: string): string {
  writeFiles(dir, CORPUS_FILES);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=Corpus', '-c', 'user.email=corpus@localhost', ...args], {
      cwd: dir,
      stdio: 'ignore',
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'corpus: math with a failing test');
  return dir;
}

/** The code-review judge of a cheat corpus: it passes every change, so only the deterministic gate can reject a cheat. */
export const JUDGE_PASSES_EVERYTHING: ModelRule = {
  name: 'judge passes',
  match: { role: 'checker' },
  reply: {
    content: [
      {
        type: 'tool_use',
        name: 'submit_verdict',
        input: { passed: true, reason: 'looks fine', failed_items: [], required_correction: '' },
      },
    ],
    usage: { input_tokens: 50, output_tokens: 10 },
  },
} as ModelRule;

/** The worker's python3 with pytest (its executable and install prefix, real paths), or undefined where there is none. */
export function findPytest(): { exe: string; prefix: string } | undefined {
  const found = spawnSync('python3', ['-c', 'import sys, pytest; print(sys.executable); print(sys.prefix)'], {
    encoding: 'utf8',
  });
  if (found.status !== 0) return undefined;
  const [exe = '', prefix = ''] = found.stdout.trim().split('\n');
  return { exe: realpathSync(exe), prefix: realpathSync(prefix) };
}

/**
 * The gate's tests check of one attempt (`commits` as {@link commitAttempt} made them in `root`;
 * `commit: null` for a run in place, whose working state is the attempt),
 * as the corpus suites run it: a regression test required and a 2-minute timeout unless `check`
 * says otherwise.
 */
export function gateTests(
  workflowId: string,
  root: string,
  commits: { base: string; commit: string | null },
  check: Omit<TestsCheck, 'kind' | 'name' | 'requireRegressionTest' | 'timeout'> &
    Partial<Pick<TestsCheck, 'requireRegressionTest' | 'timeout'>>,
  sandbox: Sandbox,
  keys?: KeyRing,
) {
  return runTestsCheck(
    {
      workflowId,
      attempt: 1,
      root,
      baseRef: commits.base,
      commit: commits.commit,
      check: { kind: 'tests', name: 'tests', requireRegressionTest: true, timeout: '2m', ...check },
    },
    sandbox,
    keys,
  );
}

/** A corpus case: `base` committed, `change` committed on it, and the rules the tests check and the change policy must fail. */
export interface GateCase {
  id: string;
  base: Record<string, string | Buffer>;
  change: Record<string, string | Buffer>;
  allowed?: string[];
  expect: { tests: string[]; policy: string[] };
}

/**
 * The tests check (`check`, with {@link gateTests}' defaults) and the change policy (`c.allowed`,
 * else `allowed`) on a repository `<dir>/<c.id>` made of the case's commits: the rules each failed.
 */
export async function gateCase(
  dir: string,
  prefix: string,
  c: GateCase,
  check: Parameters<typeof gateTests>[3],
  sandbox: Sandbox,
  allowed: string[],
): Promise<{ id: string; tests: string[]; policy: string[] }> {
  const root = path.join(dir, c.id);
  const commits = commitAttempt(root, c.base, c.change);
  const tests = await gateTests(`${prefix}-${c.id}`, root, commits, check, sandbox);
  const policy = await runDiffPolicyCheck({
    check: { kind: 'diff', name: 'change policy', allowedPaths: c.allowed ?? allowed },
    root,
    baseRef: commits.base,
  });
  return { id: c.id, tests: tests.failedItems, policy: policy.failedItems };
}

/** The project's own jest, which the jest cases run in the sandbox. */
export const JEST = path.join(__dirname, '..', '..', 'node_modules', 'jest', 'bin', 'jest.js');

/** The real sandbox, able to read `installed` too (a runner's installation: jest's node_modules, python's prefix). */
export function sandboxReading(installed: string): Sandbox {
  return createSandbox(sandboxConfigFromEnv({ ...process.env, LOOPWRIGHT_SANDBOX_READ: installed }));
}

/** The real sandbox, able to read the project's node_modules (where {@link JEST} lies). */
export const jestSandbox = (): Sandbox => sandboxReading(realpathSync(path.dirname(path.dirname(path.dirname(JEST)))));
