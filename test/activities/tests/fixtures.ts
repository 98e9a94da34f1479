import { readFileSync } from 'node:fs';
import path from 'node:path';
import { testId, type TestResult } from '../../../common/test-results';

/** The folder of the real runner output (see its README.md). */
export const FIXTURES = path.join(__dirname, '..', '..', 'fixtures', 'test-results');

/** Where the samples ran when they were captured: the workspace root of the fixtures' paths. */
export const sampleRoot = (runner: string) => `/tmp/loopwright-runner-samples/${runner}`;

export const fixture = (file: string) => readFileSync(path.join(FIXTURES, file), 'utf8');

/** Results as `id → outcome`, the way the gate compares runs. */
export function outcomes(results: TestResult[]): Record<string, string> {
  return Object.fromEntries(results.map((t) => [testId(t), t.outcome]));
}
