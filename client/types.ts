import type { Models } from '../common/loop-spec';
import type { ModelPrice } from '../common/pricing';
import type { RunState } from '../common/run-record';

/** Settings a client applies to the runs it starts. */
export interface LoopConfig {
  models: Models;
  /** Price table; the run pins the prices of its models. */
  prices: Record<string, ModelPrice>;
}

/** One row of `list`. */
export interface RunSummary {
  workflowId: string;
  loop: string | null;
  state: RunState | null;
  attempt: number | null;
  costUsd: number | null;
  tokens: number | null;
  /** Temporal's execution status (RUNNING, COMPLETED, ...). */
  status: string;
  startTime: string;
  closeTime: string | null;
}
