import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { DecisionSchema, type Decision, type DecisionRecord } from '../common/decision';
import { parseDuration } from '../common/duration';
import { zodIssues } from '../common/format';
import type { LoopInput } from '../common/loop-input';
import type { FeedbackEntry } from '../common/prompts';
import { isTerminal, type RunRecord, type RunState, type StopReason, type Verdict } from '../common/run-record';
import {
  LoopAttempt,
  LoopAutonomy,
  LoopCostUsd,
  LoopItemKey,
  LoopName,
  LoopState,
  LoopTokens,
} from '../common/search-attributes';
import { decisionSignal, stateQuery } from './messages';
import { feedbackFrom, newRecord, recordAttempt } from './run-record';

/**
 * Model calls: 5 minutes per try, heartbeat every 5 s (30 s without one is a lost worker),
 * up to 5 tries with backoff; 4xx request errors other than 408/409/429 are not retried.
 */
const MODEL_CALL: ActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5, nonRetryableErrorTypes: ['ModelRequestError'] },
};
const acts = proxyActivities<Activities>(MODEL_CALL);

/**
 * The verified run: for attempt 1..maxAttempts the worker model produces a candidate, every
 * check judges it, and a failing attempt's reasons and required corrections become feedback
 * for the next one. All checks pass → `completed`. Attempts spent → `awaiting_human` until a
 * decision signal (approve = human override, reject, retry with guidance and more attempts)
 * or the escalation deadline (→ `budget_exhausted`). Cancellation ends it `canceled`; an
 * error that retries cannot fix ends it `failed`. Every ending returns the full record.
 */
export async function loopWorkflow(input: LoopInput): Promise<RunRecord> {
  const info = workflowInfo();
  const record = newRecord(info.workflowId, input, new Date().toISOString());
  const feedback: FeedbackEntry[] = [];
  let pending: Decision | undefined;

  setHandler(stateQuery, () => record);
  setHandler(decisionSignal, (raw) => {
    const at = new Date().toISOString();
    const parsed = DecisionSchema.safeParse(raw);
    if (!parsed.success) {
      const r = raw as Partial<Decision> | undefined;
      record.decisions.push({ ...(r as Decision), status: 'refused', reason: `malformed decision: ${zodIssues(parsed.error).join('; ')}`, at });
      return;
    }
    const decision = parsed.data;
    if (record.decisions.some((d) => d.id === decision.id)) return; // a repeated delivery of the same decision
    const waiting = record.state === 'awaiting_human' && pending === undefined;
    const entry: DecisionRecord = waiting
      ? { ...decision, status: 'applied', at }
      : { ...decision, status: 'refused', reason: `the run is ${record.state}, not waiting for a decision`, at };
    record.decisions.push(entry);
    if (waiting) {
      pending = decision;
      record.decision = entry;
    }
  });

  const transition = (state: RunState): void => {
    record.state = state;
    upsertSearchAttributes([
      { key: LoopState, value: state },
      { key: LoopAttempt, value: record.attempt },
      { key: LoopCostUsd, value: record.usage.total.costUsd },
      { key: LoopTokens, value: record.usage.total.inputTokens + record.usage.total.outputTokens },
    ]);
    setCurrentDetails(details(record));
  };
  const finish = (state: RunState, stopReason: StopReason, output: string | null = null): RunRecord => {
    record.stopReason = stopReason;
    record.output = output;
    record.ok = state === 'completed';
    record.endedAt = new Date().toISOString();
    transition(state);
    return record;
  };

  upsertSearchAttributes([
    { key: LoopName, value: input.loop },
    { key: LoopAutonomy, value: input.spec.autonomy },
    ...(input.itemKey ? [{ key: LoopItemKey, value: input.itemKey }] : []),
  ]);
  transition('running');

  try {
    let maxAttempts = input.spec.budget.maxAttempts;
    for (;;) {
      while (record.attempts.length < maxAttempts) {
        const n = record.attempts.length + 1;
        record.attempt = n;
        transition('running');
        const generated = await acts.generateCandidate.executeWithOptions(
          { ...MODEL_CALL, summary: `claude (worker): attempt ${n}` },
          [{ workflowId: info.workflowId, attempt: n, model: input.spec.models.worker, systemPrompt: input.spec.agent.systemPrompt, task: input.task, feedback, maxTokens: input.spec.agent.maxTokens }],
        );
        transition('verifying');
        const verdicts: Verdict[] = [];
        for (const check of input.spec.checks) {
          const verdict = await acts.runCheck.executeWithOptions(
            { ...MODEL_CALL, summary: `check ${check.name}: attempt ${n}` },
            [{ workflowId: info.workflowId, attempt: n, checkerModel: input.spec.models.checker, check, task: input.task, candidate: generated.candidate }],
          );
          verdicts.push(pinnedRubric(verdict, input.rubricHash));
        }
        const attempt = recordAttempt(record, n, generated.candidate, generated.usage, verdicts);
        if (attempt.passed) return finish('completed', 'passed', attempt.candidate);
        feedback.push(feedbackFrom(attempt));
      }

      const decision = await escalate(record, 'attempts', `${record.attempts.length}/${maxAttempts} attempts used without passing the checks`, input, transition, () => pending);
      pending = undefined;
      const last = record.attempts[record.attempts.length - 1];
      if (!decision) return finish('budget_exhausted', 'attempts');
      if (decision.kind === 'approve') {
        record.override = true;
        return finish('completed', 'approved', last?.candidate ?? null);
      }
      if (decision.kind === 'reject') return finish('rejected', 'rejected');
      maxAttempts += decision.attempts;
      record.budget.maxAttempts = maxAttempts;
      feedback.push({ kind: 'human', by: decision.by, guidance: decision.guidance });
    }
  } catch (err) {
    if (isCancellation(err)) return finish('canceled', 'canceled');
    record.error = describeError(err);
    return finish('failed', 'error');
  }
}

/** Waits in `awaiting_human` for a decision until the escalation deadline; undefined on timeout. */
async function escalate(
  record: RunRecord,
  stopReason: StopReason,
  reason: string,
  input: LoopInput,
  transition: (state: RunState) => void,
  pending: () => Decision | undefined,
): Promise<Decision | undefined> {
  const timeoutMs = parseDuration(input.spec.escalation.timeout) ?? 86_400_000;
  const now = Date.now();
  record.stopReason = stopReason;
  record.escalation = { reason, since: new Date(now).toISOString(), deadline: new Date(now + timeoutMs).toISOString(), timedOut: false };
  transition('awaiting_human');
  const decided = await condition(() => pending() !== undefined, timeoutMs, { summary: `wait for a human decision (${input.spec.escalation.timeout})` });
  if (!decided) record.escalation.timedOut = true;
  return pending();
}

/** A verdict given against another rubric than the one pinned at start does not count as a pass. */
function pinnedRubric(verdict: Verdict, rubricHash: string): Verdict {
  if (!verdict.rubricHash || verdict.rubricHash === rubricHash) return verdict;
  return { ...verdict, passed: false, reason: `rubric_mismatch: verdict used ${verdict.rubricHash}, run pinned ${rubricHash}` };
}

function describeError(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return `${err.cause.type ?? 'error'}: ${err.cause.message}`;
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** Markdown shown as the run's current details in the Web UI. */
function details(record: RunRecord): string {
  const last = record.attempts[record.attempts.length - 1];
  const lines = [
    `**${record.loop}**: ${record.state}${isTerminal(record.state) && record.stopReason ? ` (${record.stopReason})` : ''}`,
    `attempt ${record.attempt}/${record.budget.maxAttempts}, ${record.usage.total.inputTokens + record.usage.total.outputTokens} tokens, $${record.usage.total.costUsd.toFixed(4)}`,
  ];
  if (last) lines.push(`last verdict: ${last.passed ? 'pass' : `fail: ${last.reasons.join('; ')}`}`);
  if (record.state === 'awaiting_human' && record.escalation) lines.push(`waiting for a human until ${record.escalation.deadline}: ${record.escalation.reason}`);
  return lines.join('\n\n');
}
