import type { ToolCallRecord } from './agent';
import type { RunBudget } from './budget';
import type { AppliedDecision, DecisionRecord } from './decision';
import type { TrustRecord } from './trust';
import type { Autonomy, Check } from './loop-spec';
import type { TestEvidence } from './test-results';
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
 * - `passed` all checks passed; `approved` a human accepted an unverified candidate (an override);
 * - `rejected` a human rejected the run;
 * - `attempts`, `time`, `tokens`, `cost`: that budget ran out (→ `budget_exhausted` if nobody
 *   extends it by the deadline);
 * - `model_error`: a model call failed in a way retrying cannot fix (→ `blocked` if nobody acts);
 * - `activity_error`: a check, tool call or commit failed on every retry (its worker lost each
 *   time, or a fault in it): the run waits for a human with the reason (→ `blocked` if nobody acts);
 * - `review_timeout`: a human review was not given by the deadline (→ `blocked`);
 * - `setup_error`: the run's workspace or tools cannot be set up (→ `blocked`);
 * - `approval_timeout`: an L2 run's verified change was not approved by the deadline (→ `blocked`);
 * - `effects`: applying the effects would pass `maxSideEffects` (→ `budget_exhausted`);
 * - `effect_error`: an effect could not be applied (a conflict) (→ `blocked`);
 * - `not_granted`: the run asked for more autonomy than the worker's operator granted its loop (→ `blocked`, at start);
 * - `verification_debt`: too many of the loop's runs already wait for a human (→ `blocked`, at start);
 * - `canceled`; `error`: a fault in Loopwright itself (→ `failed`).
 */
export type StopReason =
  | 'passed'
  | 'approved'
  | 'rejected'
  | 'attempts'
  | 'time'
  | 'tokens'
  | 'cost'
  | 'model_error'
  | 'activity_error'
  | 'review_timeout'
  | 'setup_error'
  | 'approval_timeout'
  | 'effects'
  | 'effect_error'
  | 'verification_debt'
  | 'not_granted'
  | 'canceled'
  | 'error';

/** The kind of a verdict: a check's kind from the loop spec, or `output` (the worker's output itself failed). */
export type CheckKind = Check['kind'] | 'output';

/**
 * What ran a command the agent wrote or chose: `bwrap` (the bubblewrap sandbox) or `none`
 * (the worker opted out with LOOPWRIGHT_SANDBOX=off and ran it unsandboxed).
 */
export type SandboxName = 'bwrap' | 'none';

/** One check's verdict on one candidate, with its evidence. */
export interface Verdict {
  check: string;
  kind: CheckKind;
  passed: boolean;
  reason: string;
  failedItems: string[];
  requiredCorrection: string;
  /** What the check saw: a command's output tail, the schema errors, the reviewer's note. */
  evidence?: string;
  /** Who gave the verdict, for a human review. */
  by?: string;
  /** Hash of the rubric the judge was given; equal to the run's pinned `rubricHash`. */
  rubricHash?: string;
  /** The sandbox that ran the check's command (command and citations checks). */
  sandbox?: SandboxName;
  /** A `tests` check's results by test identity (fail-to-pass, pass-to-pass, added, held out). */
  tests?: TestEvidence;
  /** Why a person must review the attempt before it goes on, though the check passed (a change policy with `testChanges: human`). */
  humanReview?: string;
  usage: Usage;
}

/** One attempt: the candidate, every check's verdict, and what it cost. */
export interface AttemptRecord {
  n: number;
  /** The candidate, or null when the attempt stopped before the worker answered. */
  candidate: string | null;
  passed: boolean;
  /** The reasons of the failing checks (empty when it passed). */
  reasons: string[];
  verdicts: Verdict[];
  usage: Usage;
  /** Why the attempt stopped early: a spent budget or a model error. */
  stopped?: { reason: StopReason; detail: string };
  /** Agent sessions: the model turns taken and every tool call, allowed or denied. */
  turns?: number;
  toolCalls?: ToolCallRecord[];
  /** L2: the commit of this attempt's changes on the run's branch. */
  commit?: string | null;
}

/** The run's limits (pinned at start, extended only by recorded human decisions) and use: see `budget.ts`. */
export type { RunBudget };

/** Why and since when the run waits for a human. */
export interface Escalation {
  /**
   * `budget`: a budget ran out; `error`: a model call cannot succeed; `review`: a human check;
   * `approval`: an L2 run passed its checks and waits for approval before its effects.
   */
  kind: 'budget' | 'error' | 'review' | 'approval';
  stopReason: StopReason;
  reason: string;
  since: string;
  deadline: string;
  timedOut: boolean;
  /** Who may decide this wait (empty: anyone the signature rules allow); absent in runs from before approvers were enforced. */
  approvers?: string[];
}

/** One effect, keyed `<workflow id>/<effect name>/<sequence>`. */
export interface EffectRecord {
  key: string;
  name: string;
  kind: 'git_commit' | 'report';
  /** The branch a commit landed on, or the folder of a report. */
  target: string;
  /** The commit (git_commit); empty for a report. */
  commit: string;
  /** The file a report was written to. */
  path?: string;
  /** True when the target already had it (a retry, a repeated approval): nothing was done twice. */
  alreadyApplied: boolean;
  /** What the effect left undone beside landing, and why (a checkout of the target it left as it was). */
  note?: string;
  at: string;
  approvedBy: string | null;
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
  /** Where the agent works (runs whose loop gives it tools): the folder and, for L2, its own branch. */
  workspace: { root: string; branch: string | null } | null;
  /**
   * The sandbox that runs this run's commands (the agent's and the checks'): `bwrap`, or `none`
   * when the worker opted out (LOOPWRIGHT_SANDBOX=off). Absent for runs that run no command
   * and for runs from before the sandbox.
   */
  sandbox?: SandboxName;
  /** The candidate of the attempt that waits for a human review, with its automated verdicts. */
  pendingReview: { attempt: number; candidate: string; verdicts: Verdict[] } | null;
  budget: RunBudget;
  /** The last decision that was applied. */
  decision: AppliedDecision | null;
  /** Every decision received, applied or refused, in order. */
  decisions: DecisionRecord[];
  stopReason: StopReason | null;
  /** Set while (and after) the run waited for a human. */
  escalation: Escalation | null;
  usage: RunUsage;
  /** Effects applied (or found already applied), each with its idempotency key. */
  effects: EffectRecord[];
  /** L3: effects applied without approval wait for review here. */
  audit: {
    needed: boolean;
    reason: string;
    reviewedBy?: string;
    verdict?: 'ok' | 'bad';
    note?: string;
    at?: string;
  } | null;
  error: string | null;
  startedAt: string;
  /** The harness version the run used (see `loopwright harness`); absent before harness versions existed. */
  harnessVersion?: number;
  /** A child run of an improvement's evaluation (see LoopInput.evaluation). */
  evaluation?: boolean;
  /** What the run trusts (allowed signers, signed decisions, its autonomy grant), pinned at start; absent in runs from before. */
  trust?: TrustRecord;
  /** Where the run's trace report was written (`delivery.trace`), or why it could not be. */
  traceReport?: { path: string | null; error: string | null };
  endedAt: string | null;
}
