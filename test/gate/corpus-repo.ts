import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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
