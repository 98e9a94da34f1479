import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runDiffPolicyCheck, type DiffPolicyCheck } from '../../activities/checks/diff-policy';
import { compileAllowedPaths } from '../../activities/checks/diff-policy/paths';
import { countTestCases, findSkipMarkers } from '../../activities/checks/diff-policy/test-cases';
import { ZERO_USAGE } from '../../common/usage';

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
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const fixBug = () => write('src/math.js', MATH.replace('exports.sub = (a, b) => a + b', 'exports.sub = (a, b) => a - b'));
const addSubTest = () => write('test/math.test.js', MATH_TEST + SUB_TEST);

const policy = (over: Partial<DiffPolicyCheck> = {}): DiffPolicyCheck => ({
  kind: 'diff',
  name: 'change policy',
  allowedPaths: ['src/', 'test/'],
  requireRegressionTest: true,
  ...over,
});
const check = (over: Partial<DiffPolicyCheck> = {}, at = root) => runDiffPolicyCheck({ check: policy(over), root: at, baseRef: base });

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
  test('a fix in src/ with one added test case passes and summarises the diff', async () => {
    fixBug();
    addSubTest();
    const verdict = await check();
    expect(verdict).toMatchObject({ check: 'change policy', kind: 'diff', passed: true, failedItems: [], requiredCorrection: '' });
    expect(verdict.reason).toContain('2 files changed');
    expect(verdict.reason).toContain('test cases 2 → 3');
    expect(verdict.evidence).toContain('M src/math.js');
    expect(verdict.evidence).toContain('M test/math.test.js  (test cases 2 → 3)');
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

  test('deleting the test file fails "no deleted tests" and asks to restore it', async () => {
    fixBug();
    rmSync(path.join(root, 'test/math.test.js'));
    const verdict = await check({ requireRegressionTest: false });
    expect(verdict.passed).toBe(false);
    expect(verdict.failedItems).toEqual(['no deleted tests']);
    expect(verdict.reason).toContain('test/math.test.js (2 test cases)');
    expect(verdict.requiredCorrection).toBe('restore the deleted test test/math.test.js and fix the code instead');
    expect(verdict.evidence).toContain('D test/math.test.js  (test cases 2 → 0)');
  });

  test('removing one test case fails "no deleted tests" with the file and its counts', async () => {
    fixBug();
    write('test/math.test.js', MATH_TEST.slice(0, MATH_TEST.indexOf("test('adds negatives'")));
    const verdict = await check({ requireRegressionTest: false });
    expect(verdict.failedItems).toEqual(['no deleted tests']);
    expect(verdict.reason).toContain('test/math.test.js (2 → 1 test cases)');
  });

  test('commenting a test case out counts as removing it', async () => {
    fixBug();
    write('test/math.test.js', MATH_TEST.replace(/^(test\('adds negatives'[\s\S]*?\n\}\);)$/m, '/* $1 */'));
    const verdict = await check({ requireRegressionTest: false });
    expect(verdict.failedItems).toEqual(['no deleted tests']);
    expect(verdict.reason).toContain('test/math.test.js (2 → 1 test cases)');
  });

  test('adding .skip( to a test fails "no skipped tests" naming file:line', async () => {
    fixBug();
    write('test/math.test.js', MATH_TEST.replace("test('adds negatives'", "test.skip('adds negatives'") + SUB_TEST);
    const verdict = await check();
    expect(verdict.passed).toBe(false);
    expect(verdict.failedItems).toEqual(['no skipped tests']);
    expect(verdict.reason).toContain('test/math.test.js:9 `.skip(`');
    expect(verdict.requiredCorrection).toContain('test/math.test.js:9');
  });

  test('adding a { skip: true } option to a node:test call fails "no skipped tests"', async () => {
    fixBug();
    write('test/math.test.js', MATH_TEST.replace("test('adds negatives', () =>", "test('adds negatives', { skip: true }, () =>") + SUB_TEST);
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['no skipped tests']);
    expect(verdict.reason).toContain('test/math.test.js:9 `skip: true`');
  });

  test('a skip marker that was already there at base does not fail; a mention in a comment does not count', async () => {
    write('test/math.test.js', `${MATH_TEST}test.skip('later', () => {});\n`);
    git('commit', '-q', '-am', 'skip at base');
    base = git('rev-parse', 'HEAD');
    fixBug();
    write('test/math.test.js', `${read('test/math.test.js')}// do not use test.only( here\n${SUB_TEST}`);
    expect((await check()).passed).toBe(true);
  });

  test('editing package.json when only src/ and test/ are allowed fails "allowed paths" naming it', async () => {
    fixBug();
    addSubTest();
    write('package.json', '{ "name": "math", "scripts": { "test": "true" } }\n');
    write('build/out.js', 'ignored by .gitignore');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['allowed paths']);
    expect(verdict.reason).toContain('1 changed path outside the allowed paths (src/, test/): package.json');
    expect(verdict.requiredCorrection).toBe('revert your changes to package.json: only src/, test/ may change');
  });

  test('a fix without a new test fails "regression test" when one is required', async () => {
    fixBug();
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['regression test']);
    expect(verdict.reason).toContain('no test case was added (test cases 2 → 2)');
    expect(verdict.requiredCorrection).toContain('add a test that fails without your fix');
  });

  test('a fix without a new test passes when no regression test is required', async () => {
    fixBug();
    const verdict = await check({ requireRegressionTest: false });
    expect(verdict.passed).toBe(true);
    expect(verdict.reason).toContain('1 file changed');
  });

  test('an untracked new test file with a test case counts as an added test', async () => {
    fixBug();
    write('test/sub.test.js', `const test = require('node:test');\nconst assert = require('node:assert');\nconst { sub } = require('../src/math');\n${SUB_TEST}`);
    const verdict = await check();
    expect(verdict.passed).toBe(true);
    expect(verdict.evidence).toContain('A test/sub.test.js  (test cases 0 → 1)');
  });

  test('renaming a test file within test/ is neither a deleted test nor an added one', async () => {
    fixBug();
    git('mv', 'test/math.test.js', 'test/arith.test.js');
    const verdict = await check();
    expect(verdict.failedItems).toEqual(['regression test']);
    expect(verdict.evidence).toContain('R test/math.test.js -> test/arith.test.js  (test cases 2 → 2)');
  });

  test('several failures are all reported, each with its correction', async () => {
    write('package.json', '{}\n');
    write('test/math.test.js', MATH_TEST.replace("test('adds negatives'", "test.only('adds negatives'").replace(/test\('adds two numbers'[\s\S]*?\n\}\);\n/, ''));
    const verdict = await check();
    expect(verdict.passed).toBe(false);
    expect(verdict.failedItems).toEqual(['allowed paths', 'no deleted tests', 'no skipped tests', 'regression test']);
    expect(verdict.reason.split('; ')).toHaveLength(4);
    expect(verdict.requiredCorrection.split('; ')).toHaveLength(4);
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
    await expect(runDiffPolicyCheck({ check: policy(), root, baseRef: 'no-such-ref' })).rejects.toMatchObject({ type: 'WorkspaceError', nonRetryable: true });
    const plain = mkdtempSync(path.join(tmpdir(), 'loopwright-diff-policy-plain-'));
    try {
      await expect(runDiffPolicyCheck({ check: policy(), root: plain, baseRef: 'HEAD' })).rejects.toMatchObject({ type: 'WorkspaceError' });
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
    for (const [key, role] of [['core.fsmonitor', 'fsmonitor'], ['filter.x.clean', 'clean'], ['filter.x.smudge', 'smudge'], ['filter.x.process', 'process'], ['diff.x.textconv', 'textconv'], ['diff.x.command', 'diff-command'], ['diff.external', 'external-diff']]) {
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
      expect(verdict.reason).toContain('test cases 2 → 3');
      write('test/math.test.js', MATH_TEST.replace("test('adds negatives'", "test.skip('adds negatives'") + SUB_TEST);
      expect((await check()).reason).toContain('test/math.test.js:9 `.skip(`');
      expect(existsSync(marker)).toBe(false);
    } finally {
      for (const file of [marker, ...['fsmonitor', 'clean', 'smudge', 'process', 'textconv', 'diff-command', 'external-diff', 'hook-post-index-change', 'hook-reference-transaction', 'hook-pre-commit'].map((r) => `${root}.${r}`)]) rmSync(file, { force: true });
    }
  });

  test('an invalid testPattern is a non-retryable ConfigError', async () => {
    await expect(check({ testPattern: '(' })).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true });
  });
});

describe('allowed paths', () => {
  test('prefixes, exact files and globs allow what they name and nothing else', () => {
    const allowed = compileAllowedPaths(['src/', 'lib/**', 'test/math.test.js', 'docs/*.md']);
    for (const file of ['src/a.js', 'src/deep/b.ts', 'lib/x/y.js', 'test/math.test.js', 'docs/intro.md']) expect(allowed(file)).toBe(true);
    for (const file of ['srcx/a.js', 'test/other.test.js', 'docs/deep/intro.md', 'package.json', '../src/a.js']) expect(allowed(file)).toBe(false);
  });
});

describe('test cases and markers', () => {
  test('Python and Go test cases are counted, and their skip markers found', () => {
    const py = 'import pytest\n\ndef test_one():\n    pass\n\n@pytest.mark.skip(reason="flaky")\ndef test_two():\n    pass\n# def test_three():\n';
    expect(countTestCases(py, 'tests/test_math.py')).toBe(2);
    expect(findSkipMarkers(py, 'tests/test_math.py', 'all').map((m) => m.line)).toEqual([6]);
    const go = 'func TestAdd(t *testing.T) {\n\tt.Skip("later")\n}\n';
    expect(countTestCases(go, 'math_test.go')).toBe(1);
    expect(findSkipMarkers(go, 'math_test.go', new Set([2]))).toEqual([{ line: 2, marker: '.Skip(', text: 't.Skip("later")' }]);
  });

  test('calls like re.test( and test titles inside strings are not test cases', () => {
    expect(countTestCases("it('calls test(1) and it(2)', () => { /x/.test('y'); });\n", 'a.test.js')).toBe(1);
  });
});
