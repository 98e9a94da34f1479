import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { condition, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunRecord } from '../../common/run-record';
import {
  LoopAttempt,
  LoopAutonomy,
  LoopCostUsd,
  LoopItemKey,
  LoopName,
  LoopState,
  LoopTokens,
} from '../../common/search-attributes';
import type { RunHost, RunIdentity } from './loop-run';

/** The search attributes that say which run this is: its loop, autonomy and work item. */
export function identityAttributes(identity: RunIdentity): SearchAttributeUpdatePair[] {
  return [
    { key: LoopName, value: identity.loop },
    { key: LoopAutonomy, value: identity.autonomy },
    ...(identity.itemKey ? [{ key: LoopItemKey, value: identity.itemKey }] : []),
  ];
}

/**
 * The pairs whose value differs from the run's current search attributes (those it started with,
 * as updated by its upserts), so an upsert carries only what changed: each key costs about 40
 * bytes of history and the server re-indexes what it is sent. Never empty: when nothing changed it
 * keeps the first pair, because every state change is one upsert command and histories recorded
 * before this rule replay only with the same commands (the values of an upsert are not compared
 * on replay).
 */
export function changedAttributes(pairs: SearchAttributeUpdatePair[]): SearchAttributeUpdatePair[] {
  const current = workflowInfo().typedSearchAttributes;
  const changed = pairs.filter((p) => current.get(p.key) !== p.value);
  return changed.length > 0 ? changed : pairs.slice(0, 1);
}

/**
 * The Temporal side of a `LoopRun`: workflow time, the run's search attributes and current
 * details, durable waits. Date.now() in workflow code is Temporal's workflow time (the current
 * workflow task's start), replayed identically.
 */
export function temporalHost(): RunHost {
  return {
    now: () => Date.now(),
    show(record: RunRecord, details: string, identity?: RunIdentity): void {
      upsertSearchAttributes(
        changedAttributes([
          ...(identity ? identityAttributes(identity) : []),
          { key: LoopState, value: record.state },
          { key: LoopAttempt, value: record.attempt },
          { key: LoopCostUsd, value: record.usage.total.costUsd },
          { key: LoopTokens, value: record.budget.used.tokens },
        ]),
      );
      setCurrentDetails(details);
    },
    wait: (ready, ms, summary) => condition(ready, ms, { summary }),
    continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
  };
}
