import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AppliedDecision, Decision } from '../common/decision';
import type { DiscoveryResult } from '../common/discovery';
import type { RunRecord } from '../common/run-record';
import type { ImprovementRecord } from './improve/improve-workflow';

/**
 * A human decision for a run waiting in `awaiting_human`, as a Temporal Update: its validator
 * refuses a malformed, oversized, unsigned (where signatures are required), unauthorised or
 * out-of-turn decision before anything reaches the run's history, and the sender gets the
 * applied decision (or the refusal's reason) as the result. What `loopwright approve` uses.
 */
export const decisionUpdate = defineUpdate<AppliedDecision, [Decision]>('decide');

/**
 * The same decision as a signal, kept for senders written before the update: fire-and-forget,
 * the sender finds its decision (by `id`) in `stateQuery().decisions`, applied or refused (as a
 * bounded summary).
 */
export const decisionSignal = defineSignal<[Decision]>('decision');

/** The run's live record. */
export const stateQuery = defineQuery<RunRecord>('state');

/** A discovery run's progress: the items it found, the runs it started and the items it skipped. */
export const discoveryStateQuery = defineQuery<DiscoveryResult>('state');

/** An improvement run's record (see improve/improve-workflow.ts). Same name as a loop run's, so `decide` reads both. */
export const improveStateQuery = defineQuery<ImprovementRecord>('state');
