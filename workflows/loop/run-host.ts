import { condition, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunRecord } from '../../common/run-record';
import { LoopAttempt, LoopCostUsd, LoopState, LoopTokens } from '../../common/search-attributes';
import type { RunHost } from './loop-run';

/**
 * The Temporal side of a `LoopRun`: workflow time, the run's search attributes and current
 * details, durable waits. Date.now() in workflow code is Temporal's workflow time (the current
 * workflow task's start), replayed identically.
 */
export function temporalHost(): RunHost {
  return {
    now: () => Date.now(),
    show(record: RunRecord, details: string): void {
      upsertSearchAttributes([
        { key: LoopState, value: record.state },
        { key: LoopAttempt, value: record.attempt },
        { key: LoopCostUsd, value: record.usage.total.costUsd },
        { key: LoopTokens, value: record.budget.used.tokens },
      ]);
      setCurrentDetails(details);
    },
    wait: (ready, ms, summary) => condition(ready, ms, { summary }),
    continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
  };
}
