/**
 * Prompts of the worker agent: the task, then, for every earlier attempt in order, the
 * candidate it produced, each failing check's reason and the required correction, and any
 * human guidance. Pure, so the workflow and tests build them the same way.
 */

/** What one earlier attempt (or a human) taught the next attempt. */
export type FeedbackEntry =
  | {
      kind: 'attempt';
      attempt: number;
      candidate: string;
      failures: Array<{ check: string; reason: string; failedItems: string[]; requiredCorrection: string }>;
    }
  | { kind: 'human'; by: string; guidance: string };

/** The user message of a worker attempt. */
export function renderWorkerPrompt(task: string, feedback: readonly FeedbackEntry[]): string {
  if (feedback.length === 0) return task;
  const parts = [task, '', 'Earlier attempts did not pass review. Fix every point below in your next answer.'];
  for (const entry of feedback) {
    if (entry.kind === 'human') {
      parts.push('', `## Guidance from ${entry.by}`, entry.guidance);
      continue;
    }
    parts.push('', `## Attempt ${entry.attempt}`, '<previous_output>', entry.candidate, '</previous_output>');
    for (const f of entry.failures) {
      const items = f.failedItems.length > 0 ? ` (failed: ${f.failedItems.join('; ')})` : '';
      parts.push(`- check ${f.check} failed${items}: ${f.reason}`);
      if (f.requiredCorrection) parts.push(`  required correction: ${f.requiredCorrection}`);
    }
  }
  parts.push('', 'Answer with the complete new output only.');
  return parts.join('\n');
}
