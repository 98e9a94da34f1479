import { failingTestItems } from '../../../activities/discovery/failing-tests';
import { findCitations } from '../../../activities/checks/citations';
import { parseJestJson } from '../../../activities/tests/parse-jest';
import { parseJunitXml } from '../../../activities/tests/parse-junit';
import { parseNodeEvents } from '../../../activities/tests/parse-node';
import { parseGoTestJson } from '../../../activities/tests/parse-go';
import { matchTests } from '../../../activities/tests/test-names';
import { testKey } from '../../../common/test-key';
import type { TestResult } from '../../../common/test-results';
import { UsageError } from '../../../common/errors';
import { discoverySchemaOf } from '../../../client/discovery';
import { fixture, sampleRoot } from '../tests/fixtures';

const node = () => parseNodeEvents(fixture('node/events.jsonl'), sampleRoot('node'));
const names = (runner: Parameters<typeof failingTestItems>[0]['runner'], results: TestResult[]) =>
  failingTestItems({ runner, results }).map((i) => i.name);

describe('failingTestItems (discovery items from test results by identity)', () => {
  test('node: failing leaves by full name (a top-level test keeps its own name), files that failed to load, no parents failing only through their tests', () => {
    expect(names('node', node())).toEqual([
      'add adds two numbers',
      'outer > inner > deep fails',
      'suite whose hook fails',
      'parent test > child fails',
      'test/syntax.test.js',
      'test/throws.test.js',
    ]);
    expect(failingTestItems({ runner: 'node', results: node() })[0]).toEqual({
      key: 'add-adds-two-numbers',
      name: 'add adds two numbers',
    });
  });

  test('skipped, todo and not-run tests are not work items', () => {
    const items = names('node', node());
    expect(items.some((n) => /skip|todo|not awaited|after the failed hook/.test(n))).toBe(false);
  });

  test('jest: suite > test; pytest: the node id, as pytest users name tests; go: package > test > subtest', () => {
    expect(names('jest', parseJestJson(fixture('jest/results.json'), sampleRoot('jest')))).toEqual([
      'math > adds two numbers',
      'math > nested > deep fails',
      'after a failed beforeAll',
      'test/broken.test.js',
    ]);
    const pytest = parseJunitXml(fixture('pytest/xunit1.xml'), { workspace: sampleRoot('pytest'), dialect: 'pytest' });
    expect(failingTestItems({ runner: 'pytest', results: pytest })).toEqual([
      { key: 'tests-test-math-py-test-adds', name: 'tests/test_math.py::test_adds' },
      { key: 'tests-test-math-py-test-param-2', name: 'tests/test_math.py::test_param[2]' },
      { key: 'tests-test-math-py-test-setup-error', name: 'tests/test_math.py::test_setup_error' },
      {
        key: 'tests-test-math-py-testouter-testinner-test-deep',
        name: 'tests/test_math.py::TestOuter::TestInner::test_deep',
      },
    ]);
    expect(names('go', parseGoTestJson(fixture('go/test.jsonl')))).toEqual([
      'example.com/sample/mathx > TestAdd',
      'example.com/sample/mathx > TestTable > two_words',
      'example.com/sample/panics > TestPanics',
      'example.com/sample/broken',
    ]);
  });

  test('a name two failing tests share in different files becomes file > name, once each', () => {
    const results: TestResult[] = [
      { file: 'a.test.js', name: 'works', outcome: 'failed' },
      { file: 'b.test.js', name: 'works', outcome: 'failed' },
      { file: 'b.test.js', name: 'works', outcome: 'failed' },
    ];
    expect(names('node', results)).toEqual(['a.test.js > works', 'b.test.js > works']);
  });
});

describe('matchTests (the citations check finds the named test by identity)', () => {
  test('by full name, file > name or pytest node id; a bare test name still finds a test inside suites', () => {
    const results = node();
    expect(matchTests(results, 'add adds two numbers', 'node').map((t) => t.outcome)).toEqual(['failed']);
    expect(matchTests(results, 'test/math.test.js > outer > inner > deep fails', 'node')).toHaveLength(1);
    expect(matchTests(results, 'deep fails', 'node').map((t) => t.name)).toEqual(['outer > inner > deep fails']);
    expect(matchTests(results, 'never runs', 'node')).toEqual([]);
    const pytest = parseJunitXml(fixture('pytest/xunit1.xml'), { workspace: sampleRoot('pytest'), dialect: 'pytest' });
    expect(
      matchTests(pytest, 'tests/test_math.py::TestOuter::TestInner::test_deep', 'pytest').map((t) => t.outcome),
    ).toEqual(['failed']);
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
    expect(discoverySchemaOf('ci-triage').safeParse({ repo: '.', testCommand: 'node --test', fanOut: 2 }).success).toBe(
      true,
    );
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
