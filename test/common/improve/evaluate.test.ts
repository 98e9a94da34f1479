import { heldOutTasks, summarizeEvaluation } from '../../../common/improve/evaluate';
import type { EvalRun } from '../../../common/improve/types';

/** Runs from a table: per task, per arm, one success flag per repeat. */
function runsOf(table: Record<string, { current: boolean[]; candidate: boolean[] }>): EvalRun[] {
  const runs: EvalRun[] = [];
  for (const [task, arms] of Object.entries(table)) {
    for (const arm of ['current', 'candidate'] as const) {
      arms[arm].forEach((success, repeat) =>
        runs.push({ task, arm, repeat, success, costUsd: 0.01, workflowId: `eval/${task}/${arm}/${repeat}` }),
      );
    }
  }
  return runs;
}
const T = true;
const F = false;

describe('summarizeEvaluation', () => {
  test('accepts a gain above the noise when nothing broke', () => {
    const runs = runsOf({
      t1: { current: [F, F, F], candidate: [T, T, T] },
      t2: { current: [F, F, F], candidate: [T, T, T] },
      t3: { current: [T, T, T], candidate: [T, T, T] },
      t4: { current: [T, T, T], candidate: [T, T, T] },
    });
    const s = summarizeEvaluation(runs, { tasks: ['t1', 't2', 't3', 't4'], heldOut: ['t2'], k: 3 });
    expect(s.current).toMatchObject({
      passAtK: 0.5,
      passHatK: 0.5,
      meanPassRate: 0.5,
      repeatRates: [0.5, 0.5, 0.5],
      heldOut: { passAtK: 0, passHatK: 0, meanPassRate: 0 },
    });
    expect(s.candidate).toMatchObject({ passAtK: 1, passHatK: 1, meanPassRate: 1, heldOut: { meanPassRate: 1 } });
    expect(s.current.costUsd).toBeCloseTo(0.12);
    expect(s).toMatchObject({ fixed: ['t1', 't2'], broken: [], gain: 0.5, noise: 0, accepted: true });
    expect(s.reason).toBe('accepted: +0.50 pass rate (noise 0.00), fixed t1, t2; nothing broken');
  });

  test('refuses breaking a task that passed every time, even with a large gain', () => {
    const runs = runsOf({
      t1: { current: [F, F, F], candidate: [T, T, T] },
      t2: { current: [F, F, F], candidate: [T, T, T] },
      t3: { current: [T, T, T], candidate: [T, F, T] },
    });
    const s = summarizeEvaluation(runs, { tasks: ['t1', 't2', 't3'], heldOut: [], k: 3 });
    expect(s.gain).toBeGreaterThan(0.5);
    expect(s.broken).toEqual(['t3']);
    expect(s.accepted).toBe(false);
    expect(s.reason).toBe('refused: broke t3, which passed 3/3 before');
  });

  test('refuses a gain within the noise between repeats of the current harness', () => {
    const runs = runsOf({
      t1: { current: [T, F, T], candidate: [T, T, T] },
      t2: { current: [F, F, T], candidate: [F, T, F] },
      t3: { current: [F, F, F], candidate: [F, F, F] },
    });
    const s = summarizeEvaluation(runs, { tasks: ['t1', 't2', 't3'], heldOut: [], k: 3 });
    expect(s.current.repeatRates).toEqual([1 / 3, 0, 2 / 3]);
    expect(s.noise).toBeCloseTo(2 / 3);
    expect(s.gain).toBeCloseTo(1 / 9);
    expect(s).toMatchObject({ fixed: ['t1'], broken: [], accepted: false });
    expect(s.reason).toBe('refused: gain +0.11 is not above the noise 0.67 between repeats of the current harness');
  });

  test('counts missing runs as failures, and no gain with k = 1 is refused', () => {
    const runs = runsOf({ t1: { current: [T], candidate: [] }, t2: { current: [], candidate: [T] } });
    const s = summarizeEvaluation(runs, { tasks: ['t1', 't2'], heldOut: [], k: 1 });
    expect(s).toMatchObject({ fixed: ['t2'], broken: ['t1'], gain: 0, noise: 0, accepted: false });
    const noChange = summarizeEvaluation(runsOf({ t1: { current: [F], candidate: [F] } }), {
      tasks: ['t1'],
      heldOut: [],
      k: 1,
    });
    expect(noChange.reason).toBe(
      'refused: gain +0.00 is not above the noise 0.00 between repeats of the current harness',
    );
  });
});

describe('heldOutTasks', () => {
  const ids = Array.from({ length: 20 }, (_, i) => `t${i + 1}`);

  test('is deterministic and a task keeps its side when others are added', () => {
    const held = heldOutTasks(ids, 0.3);
    expect(heldOutTasks([...ids].reverse(), 0.3).sort()).toEqual([...held].sort());
    expect(held.length).toBeGreaterThan(0);
    expect(held.length).toBeLessThan(ids.length);
    const more = heldOutTasks([...ids, 't21', 't22', 't23'], 0.3);
    expect(more.filter((id) => ids.includes(id))).toEqual(held);
  });

  test('holds out at least one of 3 or more tasks, never all, and none when share is 0', () => {
    expect(heldOutTasks(['t1', 't2', 't3'], 0.01)).toHaveLength(1);
    expect(heldOutTasks(['t1', 't2', 't3'], 1)).toHaveLength(2);
    expect(heldOutTasks(['t1'], 1)).toEqual([]);
    expect(heldOutTasks(ids, 0)).toEqual([]);
  });
});
