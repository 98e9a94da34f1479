import type { TestOutcome, TestResult } from '../../common/test-results';
import { clip, LIMITS, lineOf, relativeFile, TestResultsError } from './limits';

/** Jest's statuses (`--json`): `pending` is `test.skip`/`xit`, `disabled` a test in a skipped suite. */
const JEST: Record<string, TestOutcome> = {
  passed: 'passed',
  focused: 'passed',
  failed: 'failed',
  pending: 'skipped',
  skipped: 'skipped',
  disabled: 'skipped',
  todo: 'todo',
};

/** Vitest's statuses (`--reporter=json`, jest's format): `skipped` and `pending` are skips. */
const VITEST: Record<string, TestOutcome> = {
  passed: 'passed',
  failed: 'failed',
  skipped: 'skipped',
  pending: 'skipped',
  disabled: 'skipped',
  todo: 'todo',
};

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function parseJson(text: string, runner: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new TestResultsError(`the results ${runner} wrote are not JSON (${(err as Error).message.slice(0, 200)})`);
  }
  if (!v || typeof v !== 'object' || !Array.isArray((v as Record<string, unknown>).testResults)) {
    throw new TestResultsError(`the results ${runner} wrote have no testResults list`);
  }
  return v as Record<string, unknown>;
}

/** Both runners write the same shape: one entry per file, with its tests in `assertionResults`. */
function parseJestShape(
  text: string,
  workspace: string,
  runner: 'jest' | 'vitest',
  statuses: Record<string, TestOutcome>,
): TestResult[] {
  const doc = parseJson(text, runner);
  const results: TestResult[] = [];
  for (const entry of doc.testResults as unknown[]) {
    if (results.length >= LIMITS.results) break;
    if (!entry || typeof entry !== 'object') continue;
    const suite = entry as Record<string, unknown>;
    const fileName = str(suite.name) ?? str(suite.testFilePath);
    const file = fileName ? relativeFile(fileName, workspace) : null;
    const tests = Array.isArray(suite.assertionResults) ? (suite.assertionResults as unknown[]) : [];
    let anyFailed = false;
    for (const t of tests) {
      if (results.length >= LIMITS.results) break;
      if (!t || typeof t !== 'object') continue;
      const a = t as Record<string, unknown>;
      const title = str(a.title);
      if (title === undefined) continue;
      const ancestors = Array.isArray(a.ancestorTitles)
        ? a.ancestorTitles.filter((x): x is string => typeof x === 'string')
        : [];
      // A status this version does not know is not a pass.
      const outcome: TestOutcome = statuses[str(a.status) ?? ''] ?? 'not_run';
      const result: TestResult = { file, name: clip([...ancestors, title].join(' > '), LIMITS.name), outcome };
      const location =
        a.location && typeof a.location === 'object' ? (a.location as Record<string, unknown>) : undefined;
      const line = lineOf(location?.line);
      if (line) result.line = line;
      if (outcome === 'failed') {
        anyFailed = true;
        const messages = Array.isArray(a.failureMessages)
          ? a.failureMessages.filter((m): m is string => typeof m === 'string')
          : [];
        if (messages.length) result.message = clip(messages.join('\n'));
      }
      results.push(result);
    }
    // The file itself failed (it did not load, or a hook outside any test threw): node's way, a failed test named by the file.
    if (str(suite.status) === 'failed' && !anyFailed && file && results.length < LIMITS.results) {
      const message = str(suite.message) ?? str(suite.failureMessage);
      results.push({ file, name: file, outcome: 'failed', ...(message ? { message: clip(message) } : {}) });
    }
  }
  return results;
}

/**
 * The results in jest's `--json --outputFile` report (with `--testLocationInResults` for lines).
 * The full name is `ancestorTitles` (the `describe` blocks) and `title`. `test.skip`, `xit` and
 * tests of a skipped `describe` are skipped, `test.todo` is todo. A file that failed to run (a
 * syntax error, an import that throws, a failing `beforeAll` outside tests) is a failed test
 * named by the file, with jest's message.
 */
export function parseJestJson(text: string, workspace: string): TestResult[] {
  return parseJestShape(text, workspace, 'jest', JEST);
}

/**
 * The results in vitest's `--reporter=json` report (with `--includeTaskLocation` for lines), the
 * same shape as jest's. `test.skip` and tests of a skipped suite are skipped, `test.todo` is todo,
 * and a file that failed to load is a failed test named by the file.
 */
export function parseVitestJson(text: string, workspace: string): TestResult[] {
  return parseJestShape(text, workspace, 'vitest', VITEST);
}
