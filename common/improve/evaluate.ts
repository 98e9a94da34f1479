import { fnv1a } from '../test-key';
import { must } from '../must';
import type { EvalRun } from './types';

/** Pass rates over a set of tasks, each run k times. */
export interface PassRates {
  /** Share of tasks with at least one success in k repeats. */
  passAtK: number;
  /** Share of tasks with k successes of k. */
  passHatK: number;
  /** Mean over tasks of successes / k. */
  meanPassRate: number;
}

/** One arm (harness) of an evaluation. */
export interface ArmSummary extends PassRates {
  /** Cost of all the arm's runs. */
  costUsd: number;
  /** The rates over the held-out tasks only (all 0 when there are none). */
  heldOut: PassRates;
  /** Per repeat, the share of tasks that succeeded in it. */
  repeatRates: number[];
  /** Successes (of k) per task. */
  successes: Record<string, number>;
}

/** The verdict of an evaluation: the candidate harness against the current one. */
export interface EvaluationSummary {
  k: number;
  tasks: string[];
  heldOut: string[];
  current: ArmSummary;
  candidate: ArmSummary;
  /** Tasks the current harness did not pass every time and the candidate passed every time. */
  fixed: string[];
  /** Tasks the current harness passed every time and the candidate failed at least once. */
  broken: string[];
  /** candidate.meanPassRate − current.meanPassRate. */
  gain: number;
  /** max − min of the current arm's repeat rates: how much it varies by chance (0 when k = 1). */
  noise: number;
  /** Nothing broken and a gain above the noise. */
  accepted: boolean;
  /** One sentence that says why. */
  reason: string;
}

/** Tolerance for comparing rates computed along different paths. */
const EPSILON = 1e-9;

/**
 * Summarizes an evaluation of a candidate harness against the current one on the regression
 * tasks, each run `k` times per arm. A task, arm and repeat with no run counts as a failure;
 * runs of other tasks or repeats are ignored in the rates (their cost still counts). Accepted
 * only when nothing that passed k/k before fails now AND the gain in mean pass rate is above the
 * noise between repeats of the current harness.
 */
export function summarizeEvaluation(
  runs: EvalRun[],
  opts: { tasks: string[]; heldOut: string[]; k: number },
): EvaluationSummary {
  const { tasks, heldOut, k } = opts;
  const current = summarizeArm(runs, 'current', tasks, heldOut, k);
  const candidate = summarizeArm(runs, 'candidate', tasks, heldOut, k);
  const fixed = tasks.filter((t) => successesOf(current, t) < k && successesOf(candidate, t) === k);
  const broken = tasks.filter((t) => successesOf(current, t) === k && successesOf(candidate, t) < k);
  const gain = candidate.meanPassRate - current.meanPassRate;
  const noise =
    current.repeatRates.length > 1 ? Math.max(...current.repeatRates) - Math.min(...current.repeatRates) : 0;
  const accepted = tasks.length > 0 && k > 0 && broken.length === 0 && gain > noise + EPSILON;
  let reason: string;
  if (tasks.length === 0 || k <= 0) reason = `refused: nothing was evaluated (${tasks.length} tasks, k = ${k})`;
  else if (broken.length > 0) reason = `refused: broke ${broken.join(', ')}, which passed ${k}/${k} before`;
  else if (!accepted)
    reason = `refused: gain ${signed(gain)} is not above the noise ${noise.toFixed(2)} between repeats of the current harness`;
  else
    reason = `accepted: ${signed(gain)} pass rate (noise ${noise.toFixed(2)}), ${fixed.length > 0 ? `fixed ${fixed.join(', ')}` : 'no task fixed outright'}; nothing broken`;
  return { k, tasks, heldOut, current, candidate, fixed, broken, gain, noise, accepted, reason };
}

function successesOf(arm: ArmSummary, task: string): number {
  return must(arm.successes[task], `summarizeArm counts every task (${task})`);
}

function summarizeArm(runs: EvalRun[], arm: EvalRun['arm'], tasks: string[], heldOut: string[], k: number): ArmSummary {
  const mine = runs.filter((r) => r.arm === arm);
  const succeeded = new Set(mine.filter((r) => r.success).map((r) => `${r.task}\u0000${r.repeat}`));
  const passed = (task: string, repeat: number) => succeeded.has(`${task}\u0000${repeat}`);
  const repeats = Array.from({ length: Math.max(k, 0) }, (_, i) => i);
  const successes: Record<string, number> = {};
  for (const task of tasks) successes[task] = repeats.filter((r) => passed(task, r)).length;
  return {
    ...rates(tasks, successes, k),
    costUsd: mine.reduce((sum, r) => sum + r.costUsd, 0),
    heldOut: rates(
      heldOut.filter((t) => tasks.includes(t)),
      successes,
      k,
    ),
    repeatRates: repeats.map((r) => (tasks.length === 0 ? 0 : tasks.filter((t) => passed(t, r)).length / tasks.length)),
    successes,
  };
}

function rates(tasks: string[], successes: Record<string, number>, k: number): PassRates {
  if (tasks.length === 0 || k <= 0) return { passAtK: 0, passHatK: 0, meanPassRate: 0 };
  const share = (pred: (t: string) => boolean) => tasks.filter(pred).length / tasks.length;
  const count = (t: string) => must(successes[t], `summarizeArm counts every task (${t})`);
  return {
    passAtK: share((t) => count(t) > 0),
    passHatK: share((t) => count(t) === k),
    meanPassRate: tasks.reduce((sum, t) => sum + count(t) / k, 0) / tasks.length,
  };
}

function signed(x: number): string {
  return `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;
}

/**
 * The tasks kept out of the proposer's sight: those whose FNV-1a hash falls below `share` of the
 * 32-bit range, so a task keeps its side as others are added. At least one when there are 3 or
 * more tasks and `share` > 0; never all of them. Returned in the order given.
 */
export function heldOutTasks(taskIds: string[], share: number): string[] {
  const ids = [...new Set(taskIds)];
  if (ids.length === 0 || !(share > 0)) return [];
  const point = (id: string) => parseInt(fnv1a(id), 16) / 0x1_0000_0000;
  // Lowest hash first, ties by id: the order tasks are added to or dropped from the held-out set.
  const byHash = [...ids].sort((a, b) => point(a) - point(b) || (a < b ? -1 : a > b ? 1 : 0));
  const held = new Set(ids.filter((id) => point(id) < share));
  const [lowest] = byHash;
  if (held.size === 0 && ids.length >= 3 && lowest !== undefined) held.add(lowest);
  for (const id of [...byHash].reverse()) {
    if (held.size < ids.length) break;
    held.delete(id);
  }
  return ids.filter((id) => held.has(id));
}
