import {
  testId,
  type TestEvidence,
  type TestOutcome,
  type TestResult,
  type TestRunner,
} from '../../../common/test-results';

/**
 * The gate's judgement of a code change from four test runs, by test identity (SWE-bench's
 * FAIL_TO_PASS and PASS_TO_PASS, and more). Pure: the runs come from activities/checks/tests.ts.
 *
 * - `base`: base as it was (code and tests);
 * - `overlay`: the candidate's code with base's test infrastructure (every test file, helper,
 *   fixture and runner config of base, as base had it, none of the candidate's) and the held-out
 *   tests: whatever the candidate did to existing tests, they run as they were written;
 * - `candidate`: the candidate as it would be committed (with the held-out tests, when there are
 *   any: they must pass there too);
 * - `regression`: base's code with the candidate's tests: a regression test must fail here.
 */
export interface GateRuns {
  base: TestResult[];
  overlay: TestResult[];
  candidate: TestResult[];
  regression: TestResult[];
}

export interface GateOptions {
  runner: TestRunner;
  /** The test the task names: a full name, its last part, or `file > name`. */
  failingTest?: string;
  requireRegressionTest: boolean;
  /** Where the held-out tests were put in the overlay checkout (relative folder), when there are any. */
  heldOutDir?: string;
  /**
   * A test file the gate added to the overlay run that loads the changed code and must fail
   * (see tests/canary.ts): when it passes, the change's code tampers with the runner or its assertions.
   */
  canaryFile?: string;
}

/** One broken rule, with what to do about it. */
export interface GateFailure {
  rule: 'fail to pass' | 'pass to pass' | 'added tests pass' | 'regression test' | 'held out' | 'test integrity';
  reason: string;
  correction: string;
}

const MAX_LISTED = 10;

function listed(items: string[]): string {
  const shown = items.slice(0, MAX_LISTED).join('; ');
  return items.length > MAX_LISTED ? `${shown}; and ${items.length - MAX_LISTED} more` : shown;
}

/** Results by identity; a test reported twice keeps its worst outcome. */
function byId(results: TestResult[]): Map<string, TestResult> {
  const rank: Record<TestOutcome, number> = { failed: 0, not_run: 1, todo: 2, skipped: 3, passed: 4 };
  const map = new Map<string, TestResult>();
  for (const r of results) {
    const id = testId(r);
    const seen = map.get(id);
    if (!seen || rank[r.outcome] < rank[seen.outcome]) map.set(id, r);
  }
  return map;
}

/** The base tests the task's failing test names: exact full name, last part of the name, or `file > name`. */
export function matchFailingTest(base: TestResult[], failingTest: string): TestResult[] {
  const want = failingTest.trim();
  const exact = base.filter((t) => t.name === want || testId(t) === want);
  if (exact.length) return exact;
  return base.filter((t) => t.name.endsWith(` > ${want}`) || testId(t).endsWith(` > ${want}`));
}

const where = (t: TestResult) => `${testId(t)}${t.line ? ` (${t.file ?? '?'}:${t.line})` : ''}`;

/** Every rule the runs break, and the evidence by identity. */
export function evaluateGate(runs: GateRuns, opts: GateOptions): { failures: GateFailure[]; evidence: TestEvidence } {
  const base = byId(runs.base);
  const overlay = byId(runs.overlay);
  const candidate = byId(runs.candidate);
  const regression = byId(runs.regression);
  const outcome = (m: Map<string, TestResult>, id: string): TestOutcome => m.get(id)?.outcome ?? 'not_run';
  const isHeldOut = (t: TestResult) =>
    opts.heldOutDir !== undefined &&
    t.file !== null &&
    (t.file === opts.heldOutDir || t.file.startsWith(`${opts.heldOutDir}/`));
  const canary = opts.canaryFile === undefined ? [] : [...overlay.values()].filter((t) => t.file === opts.canaryFile);
  const failures: GateFailure[] = [];
  const evidence: TestEvidence = {
    runner: opts.runner,
    failToPass: [],
    passToPass: { total: 0, passing: 0, broken: [] },
    added: [],
  };

  if (opts.failingTest !== undefined) {
    const named = matchFailingTest([...base.values()], opts.failingTest);
    evidence.failToPass = named.map((t) => ({
      test: testId(t),
      base: t.outcome,
      candidate: outcome(overlay, testId(t)),
    }));
    if (named.length === 0) {
      failures.push({
        rule: 'fail to pass',
        reason: `the failing test "${opts.failingTest}" is not among the ${base.size} tests the runner reported at base`,
        correction:
          "nothing the agent can change: the run names a test that does not exist at base; a person must correct the run's failingTest",
      });
    } else {
      const still = evidence.failToPass.filter((f) => f.candidate !== 'passed');
      if (still.length > 0) {
        failures.push({
          rule: 'fail to pass',
          reason: `the failing test, run as base wrote it, does not pass: ${listed(still.map((f) => `${f.test} ${f.candidate}`))}`,
          correction: `fix the code so that ${listed(still.map((f) => `"${f.test}"`))} passes as it is written at base (the gate runs base's version of every existing test file, helper and runner config)`,
        });
      }
      // Where the change as committed still has the test, it passes there too: code that tells the gate's run from the
      // committed one (the canary's file, its held-out folder, the change's own tests absent) cannot fix the bug for one only.
      const notCommitted = named
        .map((t) => ({ test: testId(t), outcome: candidate.get(testId(t))?.outcome }))
        .filter((f) => f.outcome !== undefined && f.outcome !== 'passed');
      if (still.length === 0 && notCommitted.length > 0) {
        failures.push({
          rule: 'fail to pass',
          reason: `the failing test passes with base's tests but not in the change as committed: ${listed(notCommitted.map((f) => `${f.test} ${f.outcome}`))}`,
          correction: `fix the code so that ${listed(notCommitted.map((f) => `"${f.test}"`))} passes in every run, the commit's own included: do not make the code behave differently when it sees the gate`,
        });
      }
    }
  }

  const passedAtBase = [...base.values()].filter((t) => t.outcome === 'passed');
  // A test that passed at base breaks when it does not pass with base's tests, or fails in the change as committed.
  const broken = passedAtBase.filter(
    (t) => outcome(overlay, testId(t)) !== 'passed' || candidate.get(testId(t))?.outcome === 'failed',
  );
  const brokenAs = (t: TestResult): string =>
    outcome(overlay, testId(t)) !== 'passed' ? outcome(overlay, testId(t)) : 'failed in the change as committed';
  evidence.passToPass = {
    total: passedAtBase.length,
    passing: passedAtBase.length - broken.length,
    broken: broken.map((t) => ({
      test: testId(t),
      outcome: outcome(overlay, testId(t)) !== 'passed' ? outcome(overlay, testId(t)) : 'failed',
    })),
  };
  if (broken.length > 0) {
    failures.push({
      rule: 'pass to pass',
      reason: `${broken.length} of the ${passedAtBase.length} tests that passed at base no longer pass: ${listed(broken.map((t) => `${where(t)} ${brokenAs(t)}`))}`,
      correction: `keep ${listed(broken.map((t) => `"${testId(t)}"`))} passing: they are run as base wrote them`,
    });
  }

  const added = [...candidate.values()].filter((t) => !base.has(testId(t)) && !isHeldOut(t));
  evidence.added = added.map((t) => ({ test: testId(t), candidate: t.outcome, base: outcome(regression, testId(t)) }));
  // Tests that already failed at base are the repository's business, not the change's.
  const failing = added.filter((t) => t.outcome === 'failed');
  if (failing.length > 0) {
    failures.push({
      rule: 'added tests pass',
      reason: `${failing.length} of the tests the change adds ${failing.length === 1 ? 'fails' : 'fail'} on a clean checkout of it: ${listed(failing.map(where))}`,
      correction: `make ${listed(failing.map((t) => `"${testId(t)}"`))} pass on a clean checkout of your commit, or remove ${failing.length === 1 ? 'it' : 'them'}`,
    });
  }
  const real = evidence.added.filter(
    (a) => a.candidate === 'passed' && a.base !== 'passed' && a.base !== 'skipped' && a.base !== 'todo',
  );
  if (opts.requireRegressionTest && real.length === 0) {
    failures.push({
      rule: 'regression test',
      reason:
        added.length === 0
          ? 'the change adds no test: a regression test is required'
          : `none of the ${added.length} tests the change adds fails without the fix (run on base's code): ${listed(evidence.added.map((a) => `${a.test} ${a.base} on base, ${a.candidate} on the fix`))}`,
      correction: 'add a test that fails on the code as it was and passes with your fix',
    });
  }

  if (canary.some((t) => t.outcome === 'passed')) {
    failures.push({
      rule: 'test integrity',
      reason:
        'an assertion that must fail passed once the changed code was loaded: the change tampers with the test runner or its assertions',
      correction:
        'do not patch, stub or replace the test runner, assert, or other test machinery from the code under test; fix the bug itself',
    });
  }

  if (opts.heldOutDir !== undefined) {
    const held = [...overlay.values()].filter(isHeldOut);
    const failed = held.filter((t) => t.outcome !== 'passed');
    evidence.heldOut = {
      total: held.length,
      passing: held.length - failed.length,
      failing: failed.map((t) => testId(t)),
    };
    // The agent gets no names: held-out tests must stay unseen.
    if (held.length === 0) {
      failures.push({
        rule: 'held out',
        reason: 'no held-out test ran',
        correction:
          "nothing to change in the code: the loop's held-out tests did not run; a person must look at the loop's heldOutTests",
      });
    } else if (failed.length > 0) {
      failures.push({
        rule: 'held out',
        reason: `${failed.length} of ${held.length} held-out tests fail on the change`,
        correction:
          'fix the cause of the bug in general, not for the inputs of the tests you can see: tests you cannot see check the same behaviour',
      });
    } else {
      // They ran in the change as committed too: code that tells the gate's run from the committed one is general in both.
      const notCommitted = held.filter((t) => outcome(candidate, testId(t)) !== 'passed');
      if (notCommitted.length > 0)
        failures.push({
          rule: 'held out',
          reason: `${notCommitted.length} of ${held.length} held-out tests pass with base's tests but not in the change as committed`,
          correction:
            'fix the cause of the bug in general, in every run: do not make the code behave differently when it sees the gate',
        });
    }
  }
  return { failures, evidence };
}
