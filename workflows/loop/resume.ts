import type { SessionSetup, ToolCallRecord, ToolResultRef } from '../../common/agent';
import type { FeedbackEntry } from '../../common/prompts';
import type { RunRecord } from '../../common/run-record';
import type { Trust } from '../../common/trust';
import type { Usage } from '../../common/usage';
import type { BudgetLimits } from '../../common/budget';

/** Where an agent session stands between two turns: enough to go on in a fresh run. */
export interface SessionCheckpoint {
  turn: number;
  head: string | null;
  pending?: ToolResultRef[];
  contextChars: number;
  toolCalls: ToolCallRecord[];
}

/**
 * What a run carries over when it continues as new (when Temporal suggests it, because its
 * history grew long): the whole record, the feedback, the current limits, the active time
 * used, the session set-up, and, in the middle of an attempt, the attempt's checkpoint.
 */
export interface ResumeState {
  record: RunRecord;
  feedback: FeedbackEntry[];
  limits: BudgetLimits;
  activeMs: number;
  session: SessionSetup | null;
  inFlight?: { n: number; attemptUsage: Usage; checkpoint: SessionCheckpoint };
  /** What the run pinned at start (allowed signers and all): a run keeps trusting what it started with. */
  trust?: Trust;
}
