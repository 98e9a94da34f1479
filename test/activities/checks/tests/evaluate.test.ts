import { evaluateGate, matchFailingTest, type GateRuns } from '../../../../activities/checks/tests/evaluate';
import type { TestOutcome, TestResult } from '../../../../common/test-results';
import { mustTake } from '../../../../common/must';

/** The gate's rules over four runs, by identity (the runs themselves are tested in test/gate/). */
const t = (name: string, outcome: TestOutcome, file = 'test/math.test.js'): TestResult => ({ file, name, outcome });
const FAILING = 'add adds two numbers';
const base = [t('multiply multiplies two numbers', 'passed'), t(FAILING, 'failed'), t('other', 'skipped')];
const honest: GateRuns = {
  base,
  overlay: [
    t('multiply multiplies two numbers', 'passed'),
    t(FAILING, 'passed'),
    t('other', 'skipped'),
    t('add handles negatives', 'passed'),
  ],
  candidate: [
    t('multiply multiplies two numbers', 'passed'),
    t(FAILING, 'passed'),
    t('other', 'skipped'),
    t('add handles negatives', 'passed'),
  ],
  regression: [
    t('multiply multiplies two numbers', 'passed'),
    t(FAILING, 'failed'),
    t('other', 'skipped'),
    t('add handles negatives', 'failed'),
  ],
};
const gate = (runs: GateRuns, over: Partial<Parameters<typeof evaluateGate>[1]> = {}) =>
  evaluateGate(runs, { runner: 'node', failingTest: FAILING, requireRegressionTest: true, ...over });

test('an honest fix passes every rule, and the evidence says fail-to-pass, pass-to-pass and the real regression test', () => {
  const { failures, evidence } = gate(honest);
  expect(failures).toEqual([]);
  expect(evidence.failToPass).toEqual([
    { test: `test/math.test.js > ${FAILING}`, base: 'failed', candidate: 'passed' },
  ]);
  expect(evidence.passToPass).toEqual({ total: 1, passing: 1, broken: [] });
  expect(evidence.added).toEqual([
    { test: 'test/math.test.js > add handles negatives', candidate: 'passed', base: 'failed' },
  ]);
});

test('the failing test still failing (run as base wrote it) fails "fail to pass" naming it', () => {
  const { failures } = gate({
    ...honest,
    overlay: honest.overlay.map((r) => (r.name === FAILING ? { ...r, outcome: 'failed' } : r)),
  });
  expect(failures.map((f) => f.rule)).toEqual(['fail to pass']);
  expect(failures[0]?.reason).toContain(`test/math.test.js > ${FAILING} failed`);
});

test('a failing test that is not collected at all counts as not run, not as passed', () => {
  const { failures } = gate({ ...honest, overlay: honest.overlay.filter((r) => r.name !== FAILING) });
  expect(failures[0]).toMatchObject({ rule: 'fail to pass' });
  expect(failures[0]?.reason).toContain('not_run');
});

test('a test that passed at base and no longer does fails "pass to pass"', () => {
  const { failures, evidence } = gate({
    ...honest,
    overlay: honest.overlay.map((r) => (r.name.startsWith('multiply') ? { ...r, outcome: 'failed' } : r)),
  });
  expect(failures.map((f) => f.rule)).toEqual(['pass to pass']);
  expect(evidence.passToPass).toMatchObject({ total: 1, passing: 0 });
});

test('deleting the failing test and adding two trivial ones: fail-to-pass fails and no added test is a real regression test', () => {
  const trivial = [t('one', 'passed', 'test/new.test.js'), t('two', 'passed', 'test/new.test.js')];
  const { failures } = gate({
    base,
    overlay: [
      ...honest.overlay
        .filter((r) => r.name !== 'add handles negatives')
        .map((r) => (r.name === FAILING ? { ...r, outcome: 'failed' as const } : r)),
      ...trivial,
    ],
    candidate: [t('multiply multiplies two numbers', 'passed'), ...trivial],
    regression: [t('multiply multiplies two numbers', 'passed'), ...trivial],
  });
  expect(failures.map((f) => f.rule)).toEqual(['fail to pass', 'regression test']);
  expect(failures[1]?.reason).toContain('none of the 2 tests the change adds fails without the fix');
});

test('an added test that fails on the candidate fails "added tests pass"; one skipped on base is not a regression test', () => {
  const { failures } = gate({
    ...honest,
    candidate: [...honest.candidate, t('broken new', 'failed')],
    regression: honest.regression.map((r) => (r.name === 'add handles negatives' ? { ...r, outcome: 'skipped' } : r)),
  });
  expect(failures.map((f) => f.rule)).toEqual(['added tests pass', 'regression test']);
});

test('held-out tests: all must pass, and the reason given to the agent names none of them', () => {
  const held = [
    t('secret case 1', 'passed', 'test/held-out/a.test.js'),
    t('secret case 2', 'failed', 'test/held-out/a.test.js'),
  ];
  const { failures, evidence } = gate(
    { ...honest, overlay: [...honest.overlay, ...held] },
    { heldOutDir: 'test/held-out' },
  );
  expect(failures.map((f) => f.rule)).toEqual(['held out']);
  const [heldOut] = mustTake(failures, 1, 'the held-out failure is reported');
  expect(`${heldOut.reason} ${heldOut.correction}`).not.toContain('secret');
  expect(evidence.heldOut).toEqual({ total: 2, passing: 1, failing: ['test/held-out/a.test.js > secret case 2'] });
  expect(evidence.added.map((a) => a.test)).not.toContain('test/held-out/a.test.js > secret case 1');
  expect(gate({ ...honest }, { heldOutDir: 'test/held-out' }).failures.map((f) => f.rule)).toEqual(['held out']);
});

test("a failing test name that matches nothing at base is reported as the run's problem", () => {
  const { failures } = gate(honest, { failingTest: 'no such test' });
  expect(failures[0]?.reason).toContain('is not among the 3 tests the runner reported at base');
});

test('the failing test matches by full name, last part of a suite path, or file > name', () => {
  const suite = [t('math > add > adds two numbers', 'failed'), t('adds two numbers', 'failed', 'test/other.test.js')];
  expect(matchFailingTest(suite, 'math > add > adds two numbers')).toHaveLength(1);
  expect(matchFailingTest(suite, 'test/other.test.js > adds two numbers')).toHaveLength(1);
  expect(matchFailingTest(suite.slice(0, 1), 'adds two numbers')).toHaveLength(1);
});

test('a canary (an assertion that must fail) passing in the overlay run fails "test integrity"; failing, it is ignored', () => {
  const canary = (outcome: TestOutcome) => ({
    ...honest,
    overlay: [...honest.overlay, t('canary: an assertion that must fail', outcome, 'test/zz-canary.test.cjs')],
  });
  expect(gate(canary('passed'), { canaryFile: 'test/zz-canary.test.cjs' }).failures.map((f) => f.rule)).toEqual([
    'test integrity',
  ]);
  expect(gate(canary('failed'), { canaryFile: 'test/zz-canary.test.cjs' }).failures).toEqual([]);
});
