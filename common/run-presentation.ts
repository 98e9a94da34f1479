import type { SearchAttributePair } from '@temporalio/common';
import type { LoopInput } from './loop-input';
import { redact, type Redaction } from './redact';
import {
  LoopAttempt,
  LoopAutonomy,
  LoopCostUsd,
  LoopItemKey,
  LoopName,
  LoopState,
  LoopTokens,
} from './search-attributes';

/** Which run this is, as the run list shows it: its loop, autonomy and work item (redacted). */
export interface RunIdentity {
  loop: string;
  autonomy: string;
  itemKey?: string;
}

/** Where a run is, as the run list shows it: its state, attempt (when known), cost and tokens. */
export interface RunProgress {
  state: string;
  attempt?: number;
  costUsd: number;
  tokens: number;
}

/** The search attributes that say which run this is (LoopName, LoopAutonomy, LoopItemKey). */
export function identityAttributes(identity: RunIdentity): SearchAttributePair[] {
  return [
    { key: LoopName, value: identity.loop },
    { key: LoopAutonomy, value: identity.autonomy },
    ...(identity.itemKey ? [{ key: LoopItemKey, value: identity.itemKey }] : []),
  ];
}

/** The search attributes that say where a run is (LoopState, LoopAttempt, LoopCostUsd, LoopTokens). */
export function progressAttributes(progress: RunProgress): SearchAttributePair[] {
  return [
    { key: LoopState, value: progress.state },
    ...(progress.attempt === undefined ? [] : [{ key: LoopAttempt, value: progress.attempt }]),
    { key: LoopCostUsd, value: progress.costUsd },
    { key: LoopTokens, value: progress.tokens },
  ];
}

/**
 * What a run shows in `list` and the Web UI from its start: the search attributes (LoopName,
 * LoopState 'running', LoopAttempt 1, LoopAutonomy, LoopItemKey, LoopCostUsd 0, LoopTokens 0)
 * and its summary and details. Shared by direct starts, schedule actions and discovery's child
 * starts (which keep their own summary). The workflow upserts
 * only what differs from these (workflows/loop/run-host.ts), so a run started with them sends
 * none of them again, and its first upsert is its first state change; a wrong value (a forged
 * start) is corrected by its first upsert. LoopAttempt is 1 from the start: the run is on its
 * first attempt from its first moment (it sets up, then works); one held back before it (not
 * granted, verification debt) shows 0 when it ends.
 */
export function runPresentation(plan: LoopInput, redaction: Redaction = {}) {
  const r = (text: string) =>
    redact(text, { names: [...(plan.redact ?? []), ...(redaction.names ?? [])], values: redaction.values });
  return {
    typedSearchAttributes: [
      ...identityAttributes({
        loop: plan.loop,
        autonomy: plan.spec.autonomy,
        ...(plan.itemKey ? { itemKey: r(plan.itemKey) } : {}),
      }),
      ...progressAttributes({ state: 'running', attempt: 1, costUsd: 0, tokens: 0 }),
    ],
    staticSummary: `${plan.loop}: ${r(plan.task).slice(0, 120)}`,
    staticDetails: `**loop** ${plan.loop} v${plan.spec.version} · **autonomy** ${plan.spec.autonomy} · **max attempts** ${plan.spec.budget.maxAttempts} · **rubric** ${plan.rubricHash.slice(0, 19)}…`,
  };
}
