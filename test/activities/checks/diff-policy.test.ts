import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runDiffPolicyCheck, type DiffPolicyCheck } from '../../../activities/checks/diff-policy';
import { compileAllowedPaths } from '../../../activities/checks/diff-policy/paths';
import { ZERO_USAGE } from '../../../common/usage';

const MATH = `exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a + b;\n`;
const MATH_TEST = `const test = require('node:test');
const assert = require('node:assert');
const { add, sub } = require('../src/math');

test('adds two numbers', () => {
  assert.strictEqual(add(1, 2), 3);
});

test('adds negatives', () => {
  assert.strictEqual(add(-1, -2), -3);
});
`;
const SUB_TEST = `\ntest('subtracts', () => {\n  assert.strictEqual(sub(3, 1), 2);\n});\n`;

let root: string;
let base: string;

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const write = (file: string, text: string) => {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
};
const fixBug = () =>
  write('src/math.js', MATH.replace('exports.sub = (a, b) => a + b', 'exports.sub = (a, b) => a - b'));
const addSubTest = () => write('test/math.test.js', MATH_TEST + SUB_TEST);

const policy = (over: Partial<DiffPolicyCheck> = {}): DiffPolicyCheck => ({
  kind: 'diff',
  name: 'change policy',
  allowedPaths: ['src/', 'test/'],
  ...over,
});
const check = (over: Partial<DiffPolicyCheck> = {}, at = root) =>
  runDiffPolicyCheck({ check: policy(over), root: at, baseRef: base });

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'loopwright-diff-policy-'));
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'test@example.com');
  git('config', 'user.name', 'Test');
  write('src/math.js', MATH);
  write('test/math.test.js', MATH_TEST);
  write('package.json', '{ "name": "math" }\n');
  write('.gitignore', 'build/\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  base = git('rev-parse', 'HEAD');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('runDiffPolicyCheck', () => {
  test('a fix in src/ with an added test case passes and summarises the diff', async () => {
    fixBug();
    addSubTest();
    const verdict = await check();
    expect(verdict).toMatchObject({
      check: 'change policy',
      kind: 'diff',
      passed: true,
      failedItems: [],
      requiredCorrection: '',
    });
    expect(verdict.reason).toContain('2 files changed');
    expect(verdict.evidence).toContain('M src/math.js');
    expect(verdict.evidence).toContain('M test/math.test.js  (test infrastructure)');
    expect(verdict.usage).toEqual(ZERO_USAGE);
  });

  test('committed changes and uncommitted changes are both compared with the base, and the real index is untouched', async () => {
    git('checkout', '-q', '-b', 'loopwright/run');
    fixBug();
    git('commit', '-q', '-am', 'fix');
    addSubTest();
    git('add', 'test/math.test.js');
    write('src/extra.js', 'module.exports = 1;\n');
    const statusBefore = git('status', '--porcelain');
    const verdict = await check();
    expect(verdict.passed).toBe(true);
    expect(verdict.evidence).toContain('M src/math.js');
    expect(verdict.evidence).toContain('A src/extra.js');
    expect(git('status', '--porcelain')).toBe(statusBefore);
    expect(git('diff', '--cached', '--name-only')).toBe('test/math.test.js');
  });

  test('deleting the test file fails "tests append-only" and asks to restore it', async () => {
    fixBug();
    rmSync(path.join(root, 'test/math.test.js'));
    const verdict = await check();
    expect(verdict.passed).toBe(false);
    expect(verdict.failedItems).toEqual(['tests append-only']);
    expect(verdict.reason).toContain('test/math.test.js deleted');
    expect(verdict.requiredCorrection).toContain('restore test/math.test.js as base has it');
  });

  test('removing, commenting out, skipping or weakening an existing test case fails "tests append-only" with file:line', async () => {
    const edits: Array<[string, string]> = [
      [MATH_TEST.slice(0, MATH_TEST.indexOf("test('adds negatives'")), 'test/math.test.js:9'],
      [MATH_TEST.replace(/^(test\('adds negatives'[\s\S]*?\n\}\);)$/m, '/* $1 */'), 'test/math.test.js:9'],
      [
        MATH_TEST.replace("test('adds negatives'", "test.skip('adds negatives'"),
        "test/math.test.js:9 `test('adds negatives'",
      ],
      [
        MATH_TEST.replace("test('adds negatives', () =>", "test('adds negatives', { 'skip': true }, () =>"),
        'test/math.test.js:9',
      ],
      [MATH_TEST.replace('assert.strictEqual(add(-1, -2), -3)', 'assert.ok(true)'), 'test/math.test.js:10'],
      [
        MATH_TEST.replace('assert.strictEqual(add(1, 2), 3);', 'try { assert.strictEqual(add(1, 2), 3); } catch {}'),
        'test/math.test.js:6',
      ],
    ];
    fixBug();
    for (const [text, where] of edits) {
      write('test/math.test.js', text + SUB_TEST);
      const verdict = await check();
      expect(verdict.failedItems).toEqual(['tests append-only']);
      expect(verdict.reason).toContain(where);
    }
  });

  test('renaming a test file (so the runner no longer collects it) fails "tests append-only"', async () => {
    fixBug();
    git('mv', 'test/math.test.js', 'test/math.test.js.disabled');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['tests append-only']);
    expect(verdict.reason).toContain('test/math.test.js renamed to test/math.test.js.disabled');
  });

  test('a helper or runner config in the test infrastructure is append-only too; adding a new one is fine', async () => {
    write('test/helpers.js', 'module.exports.same = (a, b) => require("node:assert").strictEqual(a, b);\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'helper');
    base = git('rev-parse', 'HEAD');
    fixBug();
    addSubTest();
    write('test/helpers.js', 'module.exports.same = () => {};\n');
    expect((await check()).reason).toContain('test/helpers.js:1');
    write('test/helpers.js', 'module.exports.same = (a, b) => require("node:assert").strictEqual(a, b);\n');
    write('test/more-helpers.js', 'module.exports = {};\n');
    expect((await check()).passed).toBe(true);
  });

  test('with testChanges: human, a change to an existing test passes the check and asks for a person instead', async () => {
    fixBug();
    write(
      'test/math.test.js',
      MATH_TEST.replace('assert.strictEqual(add(-1, -2), -3)', 'assert.strictEqual(add(-1, -2), -3, "negatives")') +
        SUB_TEST,
    );
    const verdict = await check({ testChanges: 'human' });
    expect(verdict).toMatchObject({ passed: true, failedItems: [] });
    expect(verdict.humanReview).toContain('test/math.test.js:10');
    expect((await check()).failedItems).toEqual(['tests append-only']);
    addSubTest();
    expect((await check({ testChanges: 'human' })).humanReview).toBeUndefined();
  });

  test('a new runner configuration (a conftest.py, a jest config) fails "tests append-only": it changes how the existing tests run', async () => {
    fixBug();
    addSubTest();
    write('test/conftest.py', 'def pytest_runtest_makereport(item, call): pass\n');
    write('src/jest.config.js', 'module.exports = { testPathIgnorePatterns: ["math"] };\n');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['tests append-only']);
    expect(verdict.reason).toContain('src/jest.config.js added (runner configuration)');
    expect(verdict.reason).toContain('test/conftest.py added (runner configuration)');
  });

  test('appending to a test file whose last line had no newline counts as an addition', async () => {
    write('test/math.test.js', MATH_TEST.trimEnd());
    git('commit', '-q', '-am', 'no newline at end');
    base = git('rev-parse', 'HEAD');
    fixBug();
    write('test/math.test.js', `${MATH_TEST}${SUB_TEST}`);
    expect((await check()).passed).toBe(true);
  });

  test('editing package.json when only src/ and test/ are allowed fails "allowed paths" naming it (and, for its test script, "tests append-only")', async () => {
    fixBug();
    addSubTest();
    write('package.json', '{ "name": "math", "scripts": { "test": "true" } }\n');
    write('build/out.js', 'ignored by .gitignore');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['allowed paths', 'tests append-only']);
    expect(verdict.reason).toContain('package.json: scripts.test added (runner configuration)');
    expect(verdict.reason).toContain('1 changed path outside the allowed paths (src/, test/): package.json');
    expect(verdict.requiredCorrection).toMatch(
      /^revert your changes to package.json: only src\/, test\/ may change; restore package.json as base has it/,
    );
  });

  test('in the run\'s own worktree, an ignored config file the attempt left (an .npmrc) fails "no stray files"; dependency folders do not', async () => {
    write('.gitignore', 'build/\n.npmrc\nnode_modules/\n');
    git('commit', '-q', '-am', 'ignore');
    base = git('rev-parse', 'HEAD');
    fixBug();
    addSubTest();
    write('node_modules/x/index.js', '1;\n');
    expect((await runDiffPolicyCheck({ check: policy(), root, baseRef: base, isolated: true })).passed).toBe(true);
    write('.npmrc', 'node-options=--require ./test/fake.js\n');
    const verdict = await runDiffPolicyCheck({ check: policy(), root, baseRef: base, isolated: true });
    expect(verdict.failedItems).toEqual(['no stray files']);
    expect(verdict.reason).toContain('.npmrc');
    expect((await check()).passed).toBe(true); // a folder the run did not make itself is not looked at
  });

  test('where package.json may change, a new dependency passes, and a new pretest script or a nested package.json setting the module type fails "tests append-only"', async () => {
    fixBug();
    addSubTest();
    const allowed = { allowedPaths: ['src/', 'test/', 'package.json'] };
    write('package.json', '{ "name": "math", "dependencies": { "left-pad": "1.3.0" } }\n');
    expect((await check(allowed)).passed).toBe(true);
    write('package.json', '{ "name": "math", "scripts": { "pretest": "sed -i s/-/+/ src/math.js" } }\n');
    write('src/package.json', '{ "type": "module" }\n');
    const verdict = await check(allowed);
    expect(verdict.failedItems).toEqual(['tests append-only']);
    expect(verdict.reason).toContain('package.json: scripts.pretest added (runner configuration)');
    expect(verdict.reason).toContain('src/package.json: type added (runner configuration)');
  });

  test('a package added under a node_modules folder the repository does not ignore, or a .pth file, fails "tests append-only": it would be loaded in place of the real one, or when Python starts', async () => {
    fixBug();
    addSubTest();
    write('test/node_modules/chai/index.js', 'exports.expect = () => ({ to: { equal() {} } });\n');
    write('src/zz.pth', 'import patch\n');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['tests append-only']);
    expect(verdict.reason).toContain('test/node_modules/chai/index.js added (runner configuration)');
    expect(verdict.reason).toContain('src/zz.pth added (runner configuration)');
  });

  test('several failures are all reported, each with its correction', async () => {
    write('package.json', '{}\n');
    write('test/math.test.js', MATH_TEST.replace(/test\('adds two numbers'[\s\S]*?\n\}\);\n/, ''));
    const verdict = await check();
    expect(verdict.passed).toBe(false);
    expect(verdict.failedItems).toEqual(['allowed paths', 'tests append-only']);
    expect(verdict.reason.split('; ')).toHaveLength(2);
    expect(verdict.requiredCorrection.split('; ')).toHaveLength(2);
  });

  test('a workspace in a subfolder of the repository is checked with paths relative to it', async () => {
    write('app/src/a.js', '1;\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'app');
    base = git('rev-parse', 'HEAD');
    write('app/src/a.js', '2;\n');
    write('app/test/a.test.js', "test('a', () => {});\n");
    fixBug();
    const verdict = await check({}, path.join(root, 'app'));
    expect(verdict.passed).toBe(true);
    expect(verdict.evidence).toContain('M src/a.js');
    expect(verdict.evidence).not.toContain('math');
  });

  test('an unknown base or a folder that is not a repository is a non-retryable WorkspaceError', async () => {
    await expect(runDiffPolicyCheck({ check: policy(), root, baseRef: 'no-such-ref' })).rejects.toMatchObject({
      type: 'WorkspaceError',
      nonRetryable: true,
    });
    const plain = mkdtempSync(path.join(tmpdir(), 'loopwright-diff-policy-plain-'));
    try {
      await expect(runDiffPolicyCheck({ check: policy(), root: plain, baseRef: 'HEAD' })).rejects.toMatchObject({
        type: 'WorkspaceError',
      });
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });

  test('on a repository with hostile filters, textconv, fsmonitor and hooks the verdicts are right and none of them runs', async () => {
    write('.gitattributes', '* filter=x diff=x\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'attributes');
    base = git('rev-parse', 'HEAD');
    const marker = `${root}.ran`;
    const program = (role: string) => {
      const file = `${root}.${role}`;
      writeFileSync(file, `#!/bin/sh\necho ${role} >> '${marker}'\ncat\n`);
      chmodSync(file, 0o755);
      return file;
    };
    for (const [key, role] of [
      ['core.fsmonitor', 'fsmonitor'],
      ['filter.x.clean', 'clean'],
      ['filter.x.smudge', 'smudge'],
      ['filter.x.process', 'process'],
      ['diff.x.textconv', 'textconv'],
      ['diff.x.command', 'diff-command'],
      ['diff.external', 'external-diff'],
    ] as const) {
      git('config', key, program(role));
    }
    git('config', 'filter.x.required', 'true');
    for (const hook of ['post-index-change', 'reference-transaction', 'pre-commit']) {
      writeFileSync(path.join(root, '.git', 'hooks', hook), `#!/bin/sh\n'${program(`hook-${hook}`)}' </dev/null\n`);
      chmodSync(path.join(root, '.git', 'hooks', hook), 0o755);
    }
    try {
      fixBug();
      addSubTest();
      const verdict = await check();
      expect(verdict.passed).toBe(true);
      write('test/math.test.js', MATH_TEST.replace("test('adds negatives'", "test.skip('adds negatives'") + SUB_TEST);
      expect((await check()).reason).toContain('test/math.test.js:9');
      expect(existsSync(marker)).toBe(false);
    } finally {
      for (const file of [
        marker,
        ...[
          'fsmonitor',
          'clean',
          'smudge',
          'process',
          'textconv',
          'diff-command',
          'external-diff',
          'hook-post-index-change',
          'hook-reference-transaction',
          'hook-pre-commit',
        ].map((r) => `${root}.${r}`),
      ])
        rmSync(file, { force: true });
    }
  });

  test('an invalid testPattern is a non-retryable ConfigError', async () => {
    await expect(check({ testPattern: '(' })).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true });
  });
});

describe('allowed paths', () => {
  test('prefixes, exact files and globs allow what they name and nothing else', () => {
    const allowed = compileAllowedPaths(['src/', 'lib/**', 'test/math.test.js', 'docs/*.md']);
    for (const file of ['src/a.js', 'src/deep/b.ts', 'lib/x/y.js', 'test/math.test.js', 'docs/intro.md'])
      expect(allowed(file)).toBe(true);
    for (const file of ['srcx/a.js', 'test/other.test.js', 'docs/deep/intro.md', 'package.json', '../src/a.js'])
      expect(allowed(file)).toBe(false);
  });
});
