/**
 * Test results by identity: what a test runner reported about each test, as the test-results
 * layer (activities/tests/) reads it from the runner's structured output. Pure, shared by the
 * worker, the workflow's records and the CLI.
 */

/** How one test ended, as its runner reported it. */
export type TestOutcome = 'passed' | 'failed' | 'skipped' | 'todo' | 'not_run';

/** The runners whose structured output Loopwright reads; `junit` is any runner that writes JUnit XML. */
export const TEST_RUNNERS = ['node', 'jest', 'vitest', 'pytest', 'go', 'junit'] as const;
export type TestRunner = (typeof TEST_RUNNERS)[number];

/** One test, by identity (file + full name) and outcome. */
export interface TestResult {
  /** The test file, relative to the workspace root (`/` separators); null when the runner does not say. */
  file: string | null;
  /** The full name: enclosing suites and the test's own name, joined with ` > `. */
  name: string;
  outcome: TestOutcome;
  /** 1-based line of the test in its file, when the runner says. */
  line?: number;
  /** The failure message (first lines), for a failed test. */
  message?: string;
}

/** A test's identity as one string: `file > name`, or the name alone when the file is unknown. */
export function testId(t: Pick<TestResult, 'file' | 'name'>): string {
  return t.file ? `${t.file} > ${t.name}` : t.name;
}

/**
 * What a `tests` check found, by identity (see activities/checks/tests.ts): the named failing
 * test at base and on the candidate, the tests that passed at base, the tests the candidate
 * added (with its code and with base's), and the held-out tests.
 */
export interface TestEvidence {
  runner: TestRunner;
  /** The named failing test(s), run from base's test files on the candidate's code. */
  failToPass: Array<{ test: string; base: TestOutcome; candidate: TestOutcome }>;
  /** Every test that passed at base, run from base's test files on the candidate's code. */
  passToPass: { total: number; passing: number; broken: Array<{ test: string; outcome: TestOutcome }> };
  /** Tests the candidate added: their outcome on its own code and on base's code. */
  added: Array<{ test: string; candidate: TestOutcome; base: TestOutcome }>;
  /** Tests the agent never saw (`heldOut`), run on the candidate. */
  heldOut?: { total: number; passing: number; failing: string[] };
}
