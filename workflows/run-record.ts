import type { AttemptRecord, RunRecord, Verdict } from '../common/run-record';
import type { LoopInput } from '../common/loop-input';
import type { FeedbackEntry } from '../common/prompts';
import { ZERO_USAGE, addUsage } from '../common/usage';

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
    budget: { maxAttempts: input.spec.budget.maxAttempts, attemptsUsed: 0 },
    decision: null,
    decisions: [],
    stopReason: null,
    escalation: null,
    usage: { total: { ...ZERO_USAGE }, worker: { ...ZERO_USAGE }, checker: { ...ZERO_USAGE } },
    error: null,
    startedAt: now,
    endedAt: null,
  };
}

/** Adds an attempt to the record and charges its usage per role. Pure: returns the attempt. */
export function recordAttempt(
  record: RunRecord,
  n: number,
  candidate: string,
  workerUsage: AttemptRecord['usage'],
  verdicts: Verdict[],
): AttemptRecord {
  const failing = verdicts.filter((v) => !v.passed);
  const checkerUsage = addUsage(...verdicts.map((v) => v.usage));
  const attempt: AttemptRecord = {
    n,
    candidate,
    passed: verdicts.length > 0 && failing.length === 0,
    reasons: failing.map((v) => v.reason),
    verdicts,
    usage: addUsage(workerUsage, checkerUsage),
  };
  record.attempts.push(attempt);
  record.budget.attemptsUsed = record.attempts.length;
  record.usage = {
    worker: addUsage(record.usage.worker, workerUsage),
    checker: addUsage(record.usage.checker, checkerUsage),
    total: addUsage(record.usage.total, attempt.usage),
  };
  return attempt;
}

/** The feedback an attempt that failed gives the next one. */
export function feedbackFrom(attempt: AttemptRecord): FeedbackEntry {
  return {
    kind: 'attempt',
    attempt: attempt.n,
    candidate: attempt.candidate,
    failures: attempt.verdicts
      .filter((v) => !v.passed)
      .map((v) => ({ check: v.check, reason: v.reason, failedItems: v.failedItems, requiredCorrection: v.requiredCorrection })),
  };
}
