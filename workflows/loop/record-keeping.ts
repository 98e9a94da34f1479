import { ActivityFailure } from '@temporalio/workflow';
import type { ToolCallRecord } from '../../common/agent';
import type { LoopInput } from '../../common/loop-input';
import type { FeedbackEntry } from '../../common/prompts';
import type { AttemptRecord, RunRecord, StopReason, Verdict } from '../../common/run-record';
import { ZERO_USAGE, addUsage, type Usage } from '../../common/usage';
import { limitsOf, newRunBudget } from '../../common/budget';

/** A new record for a run that starts now. Pure. */
export function newRecord(workflowId: string, input: LoopInput, now: string): RunRecord {
  return {
    workflowId,
    loop: input.loop,
    specVersion: input.spec.version,
    autonomy: input.spec.autonomy,
    task: input.task,
    rubricHash: input.rubricHash,
    state: 'running',
    ok: false,
    output: null,
    override: false,
    attempt: 0,
    attempts: [],
    pendingReview: null,
    workspace: null,
    budget: newRunBudget(limitsOf(input.spec.budget)),
    decision: null,
    decisions: [],
    stopReason: null,
    escalation: null,
    usage: { total: { ...ZERO_USAGE }, worker: { ...ZERO_USAGE }, checker: { ...ZERO_USAGE } },
    effects: [],
    audit: null,
    error: null,
    startedAt: now,
    endedAt: null,
    ...(input.harness ? { harnessVersion: input.harness.version } : {}),
    ...(input.evaluation ? { evaluation: true } : {}),
  };
}

/** Charges one model call's usage to the run, per role and in total. */
export function chargeUsage(record: RunRecord, role: 'worker' | 'checker', usage: Usage): void {
  record.usage[role] = addUsage(record.usage[role], usage);
  record.usage.total = addUsage(record.usage.total, usage);
  record.budget.used.tokens = record.usage.total.inputTokens + record.usage.total.outputTokens;
  record.budget.used.costUsd = record.usage.total.costUsd;
}

/** Adds a finished (or stopped) attempt to the record. It passed only if every verdict passed. */
export function recordAttempt(
  record: RunRecord,
  a: {
    n: number;
    candidate: string | null;
    usage: Usage;
    verdicts: Verdict[];
    stopped?: { reason: StopReason; detail: string };
    turns?: number;
    toolCalls?: ToolCallRecord[];
    commit?: string | null;
  },
): AttemptRecord {
  const failing = a.verdicts.filter((v) => !v.passed);
  const attempt: AttemptRecord = {
    n: a.n,
    candidate: a.candidate,
    passed: !a.stopped && a.candidate !== null && a.verdicts.length > 0 && failing.length === 0,
    reasons: [...failing.map((v) => v.reason), ...(a.stopped ? [a.stopped.detail] : [])],
    verdicts: a.verdicts,
    usage: a.usage,
    ...(a.stopped ? { stopped: a.stopped } : {}),
    ...(a.toolCalls ? { turns: a.turns, toolCalls: a.toolCalls } : {}),
    ...(a.commit !== undefined ? { commit: a.commit } : {}),
  };
  record.attempts.push(attempt);
  record.budget.used.attempts = record.attempts.length;
  return attempt;
}

/** The feedback an attempt that failed gives the next one (nothing when it produced no candidate). */
export function feedbackFrom(attempt: AttemptRecord): FeedbackEntry | undefined {
  if (attempt.candidate === null) return undefined;
  return {
    kind: 'attempt',
    attempt: attempt.n,
    candidate: attempt.candidate,
    failures: attempt.verdicts
      .filter((v) => !v.passed)
      .map((v) => ({
        check: v.check,
        reason: v.reason,
        failedItems: v.failedItems,
        requiredCorrection: v.requiredCorrection,
      })),
  };
}

/** A failed verdict on the worker's output itself (no text, no final answer): it costs nothing and names `output`. */
export function outputVerdict(reason: string, correction: string): Verdict {
  return {
    check: 'output',
    kind: 'output',
    passed: false,
    reason,
    failedItems: ['output'],
    requiredCorrection: correction,
    usage: { ...ZERO_USAGE },
  };
}

/** What an activity's failure says, for the record: the activity's own error, not its wrapper. */
export function activityErrorMessage(err: unknown): string {
  return err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
}
