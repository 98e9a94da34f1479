import { testId, type TestResult, type TestRunner } from '../../common/test-results';

/** pytest's node id of a result (`tests/test_math.py::TestDiv::test_zero`), the way pytest users name tests. */
export function pytestNodeId(t: Pick<TestResult, 'file' | 'name'>): string | undefined {
  if (!t.file) return undefined;
  if (t.name === t.file) return t.file; // a file that failed to collect
  return [t.file, ...t.name.split(' > ')].join('::');
}

/** The names a result answers to: its full name, `file > name`, and for pytest its node id. */
export function namesOf(t: TestResult, runner: TestRunner): string[] {
  const names = [t.name, testId(t)];
  const nodeId = runner === 'pytest' ? pytestNodeId(t) : undefined;
  if (nodeId) names.push(nodeId);
  return names;
}

/**
 * The results a test name given by a person or a discovery run means: those whose full name,
 * `file > name` or (pytest) node id is exactly `wanted`; when none is, those whose full name
 * ends with ` > wanted` (the test's own name without its suites, as names were given before
 * tests were identified by file and suite).
 */
export function matchTests(results: TestResult[], wanted: string, runner: TestRunner): TestResult[] {
  const w = wanted.trim();
  const exact = results.filter((t) => namesOf(t, runner).includes(w));
  if (exact.length) return exact;
  return results.filter((t) => t.name.endsWith(` > ${w}`) || testId(t).endsWith(` > ${w}`));
}
