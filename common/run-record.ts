import type { DecisionRecord } from './decision';
import type { Autonomy } from './loop-spec';
import type { Usage } from './usage';

/** Running states of a run. */
export const RUNNING_STATES = ['running', 'verifying', 'awaiting_human', 'applying'] as const;
/** Terminal states: every run ends in exactly one of them, with its full record. */
export const TERMINAL_STATES = ['completed', 'rejected', 'blocked', 'canceled', 'budget_exhausted', 'failed'] as const;
export type RunState = (typeof RUNNING_STATES)[number] | (typeof TERMINAL_STATES)[number];
export const RUN_STATES: readonly RunState[] = [...RUNNING_STATES, ...TERMINAL_STATES];

export function isTerminal(state: RunState): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/**
 * Why a run stopped (or, while it waits for a human, why it escalated):
 * `passed` all checks passed; `approved` a human accepted an unverified candidate (an override);
 * `rejected` a human rejected it; `attempts` the attempt budget ran out; `canceled`; `error`.
 */
export type StopReason = 'passed' | 'approved' | 'rejected' | 'attempts' | 'canceled' | 'error';

/** One check's verdict on one candidate, with its evidence. */
export interface Verdict {
  check: string;
  kind: 'judge';
  passed: boolean;
  reason: string;
  failedItems: string[];
  requiredCorrection: string;
  /** Hash of the rubric the judge was given; equal to the run's pinned `rubricHash`. */
  rubricHash?: string;
  usage: Usage;
}

/** One attempt: the candidate, every check's verdict, and what it cost. */
export interface AttemptRecord {
  n: number;
  candidate: string;
  passed: boolean;
  /** The reasons of the failing checks (empty when it passed). */
  reasons: string[];
  verdicts: Verdict[];
  usage: Usage;
}

/** Usage of the run, in total and per role. */
export interface RunUsage {
  total: Usage;
  worker: Usage;
  checker: Usage;
}

/**
 * The run's record: what `state` returns while it runs, what `loopWorkflow` returns when it
 * ends, and what `loopwright status --json` prints.
 */
export interface RunRecord {
  workflowId: string;
  loop: string;
  specVersion: string;
  autonomy: Autonomy;
  task: string;
  rubricHash: string;
  state: RunState;
  /** True when the run completed (all checks passed, or a human approved). */
  ok: boolean;
  /** The accepted candidate, when there is one. */
  output: string | null;
  /** True when a human accepted a candidate that did not pass its checks. */
  override: boolean;
  /** The attempt in progress, or the last one (0 before the first). */
  attempt: number;
  attempts: AttemptRecord[];
  budget: { maxAttempts: number; attemptsUsed: number };
  /** The last decision that was applied. */
  decision: DecisionRecord | null;
  /** Every decision received, applied or refused, in order. */
  decisions: DecisionRecord[];
  stopReason: StopReason | null;
  /** Set while (and after) the run waited for a human. */
  escalation: { reason: string; since: string; deadline: string; timedOut: boolean } | null;
  usage: RunUsage;
  error: string | null;
  startedAt: string;
  endedAt: string | null;
}
