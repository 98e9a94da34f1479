/** The public client API: start runs, read records, send decisions from your own scripts. */
export { LoopwrightClient, type ClientOptions, type DecisionRequest } from './loopwright-client';
export type { RunSummary } from './types';
export type { RunRecord, RunState, AttemptRecord, Verdict, StopReason } from '../common/run-record';
export type { Decision, DecisionRecord } from '../common/decision';
