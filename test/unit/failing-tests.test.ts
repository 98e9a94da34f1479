import { parseFailingTests } from '../../activities/discovery/failing-tests';
import { findCitations } from '../../activities/checks/citations';
import { testKey } from '../../common/test-key';
import { UsageError } from '../../common/errors';
import { discoverySchemaOf } from '../../client/discovery';

const names = (output: string) => parseFailingTests(output).map((i) => i.name);

describe('parseFailingTests', () => {
  test('node TAP: keeps failing leaves, drops passing and TODO tests and suites that fail only through their tests', () => {
    const tap = [
      'TAP version 13',
      '# Subtest: multiply multiplies two numbers',
      'ok 1 - multiply multiplies two numbers',
      '# Subtest: math',
      '    # Subtest: add adds two numbers',
      '    not ok 1 - add adds two numbers',
      '      ---',
      "      location: '/r/test/math.test.js:9:1'",
      '      ...',
      '    # Subtest: sub subtracts',
      '    ok 2 - sub subtracts',
      'not ok 2 - math',
      '  ---',
      "  error: '1 subtest failed'",
      '  ...',
      '# Subtest: divide by zero throws',
      'not ok 3 - divide by zero throws # fails on CI',
      'not ok 4 - rounding # TODO later',
      '1..3',
      '# fail 2',
    ].join('\n');
    expect(names(tap)).toEqual(['add adds two numbers', 'divide by zero throws']);
  });

  test('node spec reporter: failing tests once each, without durations or the summary heading', () => {
    const spec = [
      '✔ multiply multiplies two numbers (2.37ms)',
      '✖ add adds two numbers (2.41ms)',
      '  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:',
      'ℹ fail 1',
      '',
      '✖ failing tests:',
      '',
      'test at test/math.test.js:9:1',
      '✖ add adds two numbers (2.41ms)',
    ].join('\n');
    expect(names(spec)).toEqual(['add adds two numbers']);
  });

  test('jest: the ✕ lines, without durations', () => {
    const jest = [
      'FAIL src/math.test.ts',
      '  math',
      '    ✓ multiplies (3 ms)',
      '    ✕ adds two numbers (5 ms)',
      '    ✕ handles negatives',
      'Tests:       2 failed, 1 passed, 3 total',
    ].join('\n');
    expect(names(jest)).toEqual(['adds two numbers', 'handles negatives']);
  });

  test('pytest: the node ids of the FAILED summary lines, without the message', () => {
    const pytest = [
      '=========================== short test summary info ============================',
      'FAILED tests/test_math.py::test_add - assert -1 == 5',
      'FAILED tests/test_math.py::TestDiv::test_zero',
      '========================= 2 failed, 3 passed in 0.12s =========================',
    ].join('\n');
    expect(parseFailingTests(pytest)).toEqual([
      { key: 'tests-test-math-py-test-add', name: 'tests/test_math.py::test_add' },
      { key: 'tests-test-math-py-testdiv-test-zero', name: 'tests/test_math.py::TestDiv::test_zero' },
    ]);
  });

  test('output with no failures gives no items', () => {
    expect(parseFailingTests('ok 1 - a\n✔ b (1ms)\n  ✓ c (2 ms)\n1 passed in 0.01s\n')).toEqual([]);
  });
});

describe('testKey', () => {
  test('slugs a name stably and keeps long or symbol-only names distinct with a hash', () => {
    expect(testKey('add adds two numbers')).toBe('add-adds-two-numbers');
    expect(testKey('add adds two numbers')).toBe(testKey('add adds two numbers'));
    const long = 'x'.repeat(70);
    expect(testKey(long)).toMatch(/^x{60}-[0-9a-f]{8}$/);
    expect(testKey(`${long}a`)).not.toBe(testKey(`${long}b`));
    expect(testKey('✓✓')).toMatch(/^test-[0-9a-f]{8}$/);
  });
});

describe('findCitations', () => {
  test('finds path:line and path:line-line citations once each, not URLs or times', () => {
    const text = 'See `src/math.js:3` and src/math.js:3, test/math.test.js:9-10, at 10:30 on http://host:80.';
    expect(findCitations(text).map((c) => c.text)).toEqual(['src/math.js:3', 'test/math.test.js:9-10']);
  });
});

describe('discovery sources', () => {
  test('ci-triage has one; a loop without one is a usage error (exit 2) that says so', () => {
    expect(discoverySchemaOf('ci-triage').safeParse({ repo: '.', testCommand: 'node --test', fanOut: 2 }).success).toBe(true);
    let error: unknown;
    try {
      discoverySchemaOf('fix-test');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as Error).message).toMatch(/loop fix-test has no discovery source: only ci-triage/);
  });
});
