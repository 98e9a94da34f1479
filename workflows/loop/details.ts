import { byline } from '../../common/decision';
import { isTerminal, type RunRecord } from '../../common/run-record';

/** Markdown shown as the run's current details in the Web UI: state, attempt, budget, last verdict. */
export function runDetails(record: RunRecord): string {
  const b = record.budget;
  const last = record.attempts[record.attempts.length - 1];
  const limit = (used: string, max: number | null, unit = '') => (max === null ? used : `${used}/${max}${unit}`);
  const lines = [
    `**${record.loop}**: ${record.state}${isTerminal(record.state) && record.stopReason ? ` (${record.stopReason})` : ''}`,
    [
      `attempt ${record.attempt}/${b.maxAttempts}`,
      `tokens ${limit(String(b.used.tokens), b.maxTokens)}`,
      `cost ${b.maxCostUsd === null ? `$${b.used.costUsd.toFixed(4)}` : `$${b.used.costUsd.toFixed(4)}/$${b.maxCostUsd.toFixed(2)}`}`,
      ...(b.maxWallTimeMs === null
        ? []
        : [`time ${Math.round(b.used.wallTimeMs / 1000)}s/${Math.round(b.maxWallTimeMs / 1000)}s`]),
    ].join(' · '),
  ];
  if (last) lines.push(`last verdict: ${last.passed ? 'pass' : `fail: ${last.reasons.join('; ')}`}`);
  if (record.decision)
    lines.push(`decision: ${record.decision.kind} by ${record.decision.by}${byline(record.decision)}`);
  if (record.state === 'awaiting_human' && record.escalation)
    lines.push(`waiting for a human until ${record.escalation.deadline}: ${record.escalation.reason}`);
  return lines.join('\n\n');
}
