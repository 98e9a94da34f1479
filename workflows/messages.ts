import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Decision } from '../common/decision';
import type { RunRecord } from '../common/run-record';

/**
 * A human decision for a run waiting in `awaiting_human`. Signals are fire-and-forget: the
 * sender finds its decision (by `id`) in `stateQuery().decisions`, applied or refused.
 */
export const decisionSignal = defineSignal<[Decision]>('decision');

/** The run's live record. */
export const stateQuery = defineQuery<RunRecord>('state');
