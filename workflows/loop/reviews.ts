import type { RunRecord, Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import type { AttemptProgress } from './attempt';
import type { LoopRun } from './loop-run';

/**
 * Each human check reviews the attempt's candidate, after every automated check passed; a
 * rejection becomes a failed verdict (and feedback). Returns the record when the run ends (no
 * review in time).
 */
export async function reviews(run: LoopRun, progress: AttemptProgress, n: number): Promise<RunRecord | undefined> {
  const { input, record } = run;
  // A check that passed but asks for a person (a change policy with testChanges: human) adds a review.
  const asked = progress.verdicts
    .filter((v) => v.humanReview)
    .map((v) => ({ kind: 'human' as const, name: 'test changes', approvers: [] as string[], why: v.humanReview! }));
  const humans = [
    ...input.spec.checks.flatMap((c) => (c.kind === 'human' ? [{ ...c, why: undefined as string | undefined }] : [])),
    ...asked.slice(0, 1),
  ];
  for (const check of humans) {
    record.pendingReview = { attempt: n, candidate: progress.candidate!, verdicts: [...progress.verdicts] };
    const who = check.approvers.length ? ` (${check.approvers.join(', ')})` : '';
    const decision = await run.escalate(
      'review',
      'review_timeout',
      `attempt ${n} passed its automated checks and waits for review ${check.name}${who}${check.why ? `: ${check.why}` : ''}`,
      check.approvers,
    );
    record.pendingReview = null;
    if (!decision) {
      run.recordAttempt({ n, candidate: progress.candidate, usage: run.attemptUsage, verdicts: progress.verdicts });
      return run.finish('blocked', 'review_timeout');
    }
    const approved = decision.kind === 'approve';
    // Who decided, as the gate established it: an unsigned name is only what the sender claimed.
    const by = `${decision.by}${(decision as { verified?: boolean }).verified === false ? ' (unverified)' : ''}`;
    const why = decision.kind === 'reject' ? decision.reason : decision.kind === 'approve' ? decision.note : undefined;
    const verdict: Verdict = {
      check: check.name,
      kind: 'human',
      passed: approved,
      reason: approved ? `approved by ${by}` : `rejected by ${by}${why ? `: ${why}` : ''}`,
      failedItems: approved ? [] : [check.name],
      requiredCorrection: approved ? '' : (why ?? 'the reviewer rejected it'),
      evidence: why,
      by: decision.by,
      usage: { ...ZERO_USAGE },
    };
    progress.verdicts.push(verdict);
    run.transition('verifying');
    if (!approved) return undefined;
  }
  return undefined;
}
