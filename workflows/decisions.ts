import { DecisionSchema, type Decision, type DecisionRecord } from '../common/decision';
import { zodIssues } from '../common/format';
import type { RunRecord } from '../common/run-record';

/**
 * Records a decision signal in `decisions`: a malformed one is refused with its problems, the
 * same decision delivered again (same id) is ignored, and `refusal` says why a valid one is
 * refused (or undefined/null to take it). Returns the applied entry, else undefined.
 */
export function recordDecision(decisions: DecisionRecord[], raw: unknown, refusal: (d: Decision) => string | null | undefined): DecisionRecord | undefined {
  const at = new Date().toISOString();
  const parsed = DecisionSchema.safeParse(raw);
  if (!parsed.success) {
    decisions.push({ ...(raw as Decision), status: 'refused', reason: `malformed decision: ${zodIssues(parsed.error).join('; ')}`, at });
    return undefined;
  }
  const decision = parsed.data;
  if (decisions.some((d) => d.id === decision.id)) return undefined;
  const why = refusal(decision);
  const entry: DecisionRecord = why ? { ...decision, status: 'refused', reason: why, at } : { ...decision, status: 'applied', at };
  decisions.push(entry);
  return why ? undefined : entry;
}

/**
 * Why a run would refuse `decision` now, or null when it takes it. Pure. A run takes one
 * decision per wait: approve/reject during a review; approve (an override, only when there is
 * a candidate), reject, retry or extend when a budget or an error stopped it.
 */
export function refusalReason(record: RunRecord, decision: Decision, alreadyDecided: boolean): string | null {
  if (decision.kind === 'audit') {
    if (!record.audit?.needed) return `run ${record.workflowId} does not need an audit`;
    return record.audit.reviewedBy ? `run ${record.workflowId} was already audited by ${record.audit.reviewedBy}` : null;
  }
  const esc = record.escalation;
  if (record.state !== 'awaiting_human' || !esc) return `the run is ${record.state}, not waiting for a decision`;
  if (alreadyDecided) return 'a decision was already taken for this wait';
  if (esc.kind === 'review' || esc.kind === 'approval') {
    if (decision.kind === 'approve' || decision.kind === 'reject') return null;
    return esc.kind === 'review'
      ? `the run waits for a review of attempt ${record.attempt}: approve or reject it`
      : 'the run waits for approval of its verified change: approve or reject it';
  }
  if (decision.kind === 'approve' && !record.attempts.some((a) => a.candidate !== null)) {
    return 'there is no candidate to approve: retry, extend the budget or reject';
  }
  return null;
}
