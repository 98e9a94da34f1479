import type { RunRecord } from '../common/run-record';
import { failureMessage, type HistoryEvent } from './history';
import type { TraceEscalation, TraceOutcome, TraceTime } from './types';

/** How the run ended, when `event` is the close event of the chain's last run. */
export function outcomeOf(
  event: HistoryEvent,
  when: TraceTime,
  record: RunRecord | undefined,
): TraceOutcome | undefined {
  const base = (status: TraceOutcome['status'], error: string | null = null): TraceOutcome => ({
    ...when,
    status,
    state: null,
    stopReason: null,
    ok: false,
    override: false,
    output: null,
    error,
  });
  if (event.workflowExecutionCompletedEventAttributes)
    return record ? outcomeOfRecord(record, when) : base('completed');
  if (event.workflowExecutionFailedEventAttributes)
    return base('failed', failureMessage(event.workflowExecutionFailedEventAttributes.failure));
  const terminated = event.workflowExecutionTerminatedEventAttributes;
  if (terminated) return base('terminated', `terminated${terminated.reason ? `: ${terminated.reason}` : ''}`);
  if (event.workflowExecutionCanceledEventAttributes) return base('canceled');
  if (event.workflowExecutionTimedOutEventAttributes) return base('timed_out');
  return undefined;
}

/** How a run ended that completed (returned) `record`. */
export function outcomeOfRecord(record: RunRecord, when: TraceTime): TraceOutcome {
  return {
    ...when,
    status: 'completed',
    state: record.state,
    stopReason: record.stopReason,
    ok: record.ok,
    override: record.override,
    output: record.output,
    error: record.error,
  };
}

/** An escalation's kind from its reason, for waits the run record no longer describes. */
export function guessKind(reason: string): TraceEscalation['kind'] {
  if (/passed every check: approve/.test(reason)) return 'approval';
  if (/waits for review/.test(reason)) return 'review';
  if (/ failed/.test(reason)) return 'error';
  if (/budget|exhausted|ran out/.test(reason)) return 'budget';
  return null;
}
