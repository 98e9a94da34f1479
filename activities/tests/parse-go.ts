import type { TestOutcome, TestResult } from '../../common/test-results';
import { HeadTailBuffer } from '../tools/output';
import { clip, LIMITS } from './limits';

interface GoEvent {
  Action: string;
  Package?: string;
  Test?: string;
  Output?: string;
  ImportPath?: string;
  FailedBuild?: string;
}

function asEvent(line: string): GoEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' && typeof (v as GoEvent).Action === 'string' ? (v as GoEvent) : undefined;
  } catch {
    return undefined;
  }
}

/** Collects one test's (or build's) output up to the message cap. */
class Text {
  text = '';
  add(s: string | undefined): void {
    if (s && this.text.length < LIMITS.message) this.text += s;
  }
}

const ACTIONS: Record<string, TestOutcome> = { pass: 'passed', fail: 'failed', skip: 'skipped' };
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/**
 * The results in `go test -json` output (test2json events, one JSON object a line; other lines
 * are ignored). A test is `<package> > TestName`, a subtest `<package> > TestName > sub` (go's
 * `TestName/sub`, spaces already turned into `_` by go); the file is not in go's events (null).
 * `pass`, `fail` and `skip` are passed, failed and skipped; a test that started but never ended
 * (its binary was killed) is not_run; a test that never started (after a panic in another test
 * of its package) is absent. A package that failed with no failing test (it did not build, or
 * its test binary crashed outside any test) is a failed result named by the package, with the
 * build output or the package's output as its message.
 */
export function parseGoTestJson(text: string): TestResult[] {
  const tests = new Map<string, { pkg: string; test: string; outcome?: TestOutcome; output: Text }>();
  const packages = new Map<string, { outcome?: string; failedBuild?: string; output: Text; failedTests: number }>();
  const builds = new Map<string, Text>();
  const pkgOf = (name: string) => {
    let p = packages.get(name);
    if (!p && packages.size < LIMITS.results) packages.set(name, (p = { output: new Text(), failedTests: 0 }));
    return p;
  };
  for (const line of text.split('\n')) {
    const e = asEvent(line.trim());
    if (!e) continue;
    if (e.Action === 'build-output' || e.Action === 'build-fail') {
      const key = str(e.ImportPath) ?? '';
      if (!builds.has(key) && builds.size < LIMITS.results) builds.set(key, new Text());
      builds.get(key)?.add(e.Output);
      continue;
    }
    const pkgName = str(e.Package);
    if (!pkgName) continue;
    const pkg = pkgOf(pkgName);
    if (!pkg) continue;
    const testName = str(e.Test);
    if (!testName) {
      if (e.Action === 'output') pkg.output.add(e.Output);
      else if (ACTIONS[e.Action]) pkg.outcome = e.Action;
      if (str(e.FailedBuild)) pkg.failedBuild = e.FailedBuild;
      continue;
    }
    const key = `${pkgName}\0${testName}`;
    let t = tests.get(key);
    if (!t) {
      if (tests.size >= LIMITS.results) continue;
      tests.set(key, (t = { pkg: pkgName, test: testName, output: new Text() }));
    }
    if (e.Action === 'output') {
      if (!/^=== (RUN|PAUSE|CONT|NAME)\b/.test(e.Output ?? '')) t.output.add(e.Output);
    } else if (ACTIONS[e.Action]) {
      t.outcome = ACTIONS[e.Action];
      if (t.outcome === 'failed') pkg.failedTests++;
    }
  }
  const results: TestResult[] = [];
  for (const t of tests.values()) {
    const outcome = t.outcome ?? 'not_run';
    const result: TestResult = {
      file: null,
      name: clip([t.pkg, ...t.test.split('/')].join(' > '), LIMITS.name),
      outcome,
    };
    if (outcome === 'failed' && t.output.text.trim()) result.message = clip(t.output.text.trim());
    results.push(result);
  }
  for (const [name, p] of packages) {
    if (p.outcome !== 'fail' || p.failedTests > 0) continue;
    const build = p.failedBuild !== undefined ? builds.get(p.failedBuild)?.text : undefined;
    const message = (build ?? p.output.text).trim();
    results.push({
      file: null,
      name: clip(name, LIMITS.name),
      outcome: 'failed',
      ...(message ? { message: clip(message) } : {}),
    });
  }
  return results.slice(0, LIMITS.results);
}

/** What the tests printed, from the `output` events of `go test -json` (what go test prints without `-json`), capped head and tail. */
export function goOutputText(text: string, cap: number = LIMITS.output): string {
  const out = new HeadTailBuffer(cap);
  for (const line of text.split('\n')) {
    const e = asEvent(line.trim());
    if (e && (e.Action === 'output' || e.Action === 'build-output') && typeof e.Output === 'string') out.push(e.Output);
  }
  return out.toString();
}
