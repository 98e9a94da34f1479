import type { TestOutcome, TestResult } from '../../common/test-results';
import { clip, LIMITS, lineOf, relativeFile } from './limits';

interface NodeEvent {
  type: 'test:start' | 'test:pass' | 'test:fail';
  name: string;
  nesting: number;
  file?: string;
  line?: number;
  skip?: unknown;
  todo?: unknown;
  kind?: string;
  failureType?: string;
  message?: string;
}

function asEvent(line: string): NodeEvent | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined; // a line torn by a kill, or not ours
  }
  if (!v || typeof v !== 'object') return undefined;
  const e = v as Record<string, unknown>;
  if (e.type !== 'test:start' && e.type !== 'test:pass' && e.type !== 'test:fail') return undefined;
  if (
    typeof e.name !== 'string' ||
    typeof e.nesting !== 'number' ||
    !Number.isInteger(e.nesting) ||
    e.nesting < 0 ||
    e.nesting > 1000
  )
    return undefined;
  return e as unknown as NodeEvent;
}

const given = (v: unknown) => v !== undefined && v !== null && v !== false;

/**
 * The results in the events that Loopwright's reporter for node's test runner wrote (one JSON
 * line per `test:start`, `test:pass` and `test:fail`; see node-reporter.ts). The full name comes
 * from the `test:start` events, which node emits in declaration order: the names of the
 * enclosing `describe` suites and parent tests at lower nesting. Suites are not results, unless
 * one is the only trace of its tests: skipped or todo as a whole (`describe.skip`), or failed on
 * its own (its callback or a `before` hook threw), not just because a test inside failed.
 *
 * Outcomes: `skip` → skipped, `todo` → todo (whether the todo test passed or failed), a test
 * cancelled before it ran or finished (`cancelledByParent`) → not_run, other failures → failed.
 * A file that fails before it registers a test (a syntax error, a throw at the top) is reported
 * by node as a failed test named by its path; one that exits early with code 0 as a passing
 * one; either way its own tests are absent, and the name is the file relative to the workspace.
 */
export function parseNodeEvents(text: string, workspace: string): TestResult[] {
  const stacks = new Map<string, string[]>();
  const results: TestResult[] = [];
  for (const line of text.split('\n')) {
    if (results.length >= LIMITS.results) break;
    const e = line.trim() ? asEvent(line) : undefined;
    if (!e) continue;
    const fileKey = e.file ?? '';
    const stack = stacks.get(fileKey) ?? [];
    stacks.set(fileKey, stack);
    if (e.type === 'test:start') {
      stack.length = e.nesting;
      stack[e.nesting] = clip(e.name, LIMITS.name);
      continue;
    }
    // A suite is a result only when it is the only trace of its tests: skipped or todo as a
    // whole (node then reports its tests not at all), or failed on its own (callback, hook).
    const suiteOwn = given(e.skip) || given(e.todo) || (e.type === 'test:fail' && e.failureType !== 'subtestsFailed');
    if (e.kind === 'suite' && !suiteOwn) continue;
    const file = e.file ? relativeFile(e.file, workspace) : null;
    const own = e.nesting === 0 && e.file && e.name === e.file && file ? file : clip(e.name, LIMITS.name);
    const prefix = stack.slice(0, e.nesting).filter((s): s is string => typeof s === 'string');
    let outcome: TestOutcome;
    if (given(e.todo)) outcome = 'todo';
    else if (e.type === 'test:pass') outcome = given(e.skip) ? 'skipped' : 'passed';
    else outcome = e.failureType === 'cancelledByParent' ? 'not_run' : 'failed';
    const result: TestResult = { file, name: [...prefix, own].join(' > '), outcome };
    const at = lineOf(e.line);
    if (at) result.line = at;
    if (outcome === 'failed' && typeof e.message === 'string') result.message = clip(e.message);
    results.push(result);
  }
  return results;
}
