import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Decision } from '../common/decision';
import type { DiscoveryResult } from '../common/discovery';
import type { RunRecord } from '../common/run-record';

/**
 * A human decision for a run waiting in `awaiting_human`. Signals are fire-and-forget: the
 * sender finds its decision (by `id`) in `stateQuery().decisions`, applied or refused.
 */
export const decisionSignal = defineSignal<[Decision]>('decision');

/** The run's live record. */
export const stateQuery = defineQuery<RunRecord>('state');

/** A discovery run's progress: the items it found, the runs it started and the items it skipped. */
export const discoveryStateQuery = defineQuery<DiscoveryResult>('state');

/** An improvement run's record (see improve-workflow.ts). Same name as a loop run's, so `decide` reads both. */
export const improveStateQuery = defineQuery<import('./improve-workflow').ImprovementRecord>('state');
