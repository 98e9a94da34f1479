import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { condition, patched, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunRecord } from '../../common/run-record';
import { identityAttributes, progressAttributes } from '../../common/run-presentation';
import type { RunHost, RunIdentity } from './loop-run';

/**
 * The pairs whose value differs from the run's current search attributes (those it started with,
 * as updated by its upserts), so an upsert carries only what changed: each key costs about 40
 * bytes of history and the server re-indexes what it is sent.
 */
function changedAttributes(pairs: SearchAttributeUpdatePair[]): SearchAttributeUpdatePair[] {
  const current = workflowInfo().typedSearchAttributes;
  return pairs.filter((p) => current.get(p.key) !== p.value);
}

/**
 * Which commands a run issues: `1` is `loopWorkflow`, whose runs may have started under older
 * code, so each change is asked of Temporal (`patched()`: a marker and a `TemporalChangeVersion`
 * upsert in a new run's history) and every state change is one upsert command (when nothing
 * changed it sends the first pair: histories recorded before upserts carried only changes replay
 * only with the same commands). `2` is `loopWorkflowV2`: it has every change made before it
 * existed without asking (`CHANGES_BEFORE_V2`), and a state change that changed no search
 * attribute sends no upsert (a visibility write saved).
 */
export type CommandsVersion = 1 | 2;

/**
 * The changes to the loop's commands made before `loopWorkflowV2` existed: every V2 run has them.
 * A change made since must be asked in both types (`run.has('<new id>')` does: `patched()`), since
 * V2 runs in flight were started without it. Never add an id here.
 */
const CHANGES_BEFORE_V2: ReadonlySet<string> = new Set([
  'trust',
  'lean-start',
  'sandbox-preflight',
  'activity-escalation',
]);

/**
 * The Temporal side of a `LoopRun`: workflow time, the run's search attributes and current
 * details, durable waits, which changes it takes. Date.now() in workflow code is Temporal's
 * workflow time (the current workflow task's start), replayed identically.
 */
export function temporalHost(version: CommandsVersion): RunHost {
  return {
    now: () => Date.now(),
    show(record: RunRecord, details: string, identity?: RunIdentity): void {
      const pairs: SearchAttributeUpdatePair[] = [
        ...(identity ? identityAttributes(identity) : []),
        ...progressAttributes({
          state: record.state,
          // A run's first state comes before its first attempt is counted: the attempt it started
          // with (1, common/run-presentation.ts) stands until the loop's first transition, which
          // shows the true one (as does an ending, for a run held back at start).
          ...(identity ? {} : { attempt: record.attempt }),
          costUsd: record.usage.total.costUsd,
          tokens: record.budget.used.tokens,
        }),
      ];
      const changed = changedAttributes(pairs);
      if (changed.length > 0) upsertSearchAttributes(changed);
      else if (version === 1) upsertSearchAttributes(pairs.slice(0, 1));
      setCurrentDetails(details);
    },
    wait: (ready, ms, summary) => condition(ready, ms, { summary }),
    continueAsNewSuggested: () => workflowInfo().continueAsNewSuggested,
    has: (change) => (version === 2 && CHANGES_BEFORE_V2.has(change)) || patched(change),
  };
}
