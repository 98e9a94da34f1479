import type { RunState } from '../common/run-record';

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
