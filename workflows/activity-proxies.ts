import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ModelTimeouts } from '../common/loop-spec';
import { FailureType } from '../common/failure-types';

/**
 * Time a model activity gets beyond its call's total deadline (loading and saving the
 * transcript), so the call's own deadline, which charges what arrived, always fires first.
 */
const MODEL_CALL_SLACK_MS = 60_000;

/**
 * Model calls: one try per activity (the workflow retries, see loop/model-call.ts), 11 minutes per
 * try (a call's default total deadline of 10 minutes, plus slack), heartbeats every second (10 s
 * of silence is a lost worker), and cancellation waits for the call to be aborted so a stopped
 * attempt's model call really stops. Loops that set `models.timeouts` use {@link modelCallOptions}.
 */
export const MODEL_CALL: ActivityOptions = {
  startToCloseTimeout: '11m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 1 },
};

/** {@link MODEL_CALL} for a call with these limits: the activity outlives the call's total deadline. */
export function modelCallOptions(timeouts: ModelTimeouts): ActivityOptions {
  return { ...MODEL_CALL, startToCloseTimeout: timeouts.totalMs + MODEL_CALL_SLACK_MS };
}

/**
 * How checks and tool calls are retried when their worker is lost (10 s without a heartbeat) or
 * they fail: 6 tries, 1 s apart and doubling up to 30 s (about a minute in all, beyond the
 * heartbeat timeouts), always within the attempt's wall time. When the last try fails, the run
 * waits for a human with the reason (`activity_error`, see attempt.ts), never ends `failed`.
 */
const LOST_WORKER_RETRY = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  maximumAttempts: 6,
} as const;

/** Command, test and schema checks: up to 30 minutes, heartbeats, retried as {@link LOST_WORKER_RETRY}. */
export const CHECK_CALL: ActivityOptions = {
  startToCloseTimeout: '30m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: LOST_WORKER_RETRY,
};

/**
 * Tool calls and workspace set-up: up to 15 minutes, heartbeats, retried as {@link LOST_WORKER_RETRY}.
 * A tool call the worker finished is never repeated (its completion is in history, or, when the
 * worker was lost before reporting it, its outcome in the worker's tool ledger); one a lost
 * worker did not finish is retried (edit_file recognises its own edit, see tools/edit-file.ts).
 */
export const TOOL_CALL: ActivityOptions = {
  startToCloseTimeout: '15m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { ...LOST_WORKER_RETRY, nonRetryableErrorTypes: [FailureType.Workspace] },
};

/**
 * Short reads of the worker's own files (the trust record): a local activity, run by the worker
 * that runs the workflow task, recorded as one marker, with no task round trip through the
 * server. Retried as {@link LOST_WORKER_RETRY}; when the worker is lost the workflow task times
 * out and the next worker runs it again.
 */
export const LOCAL_READ: LocalActivityOptions = {
  startToCloseTimeout: '1m',
  retry: { ...LOST_WORKER_RETRY, nonRetryableErrorTypes: [FailureType.Workspace] },
};

export const acts = proxyActivities<Activities>(MODEL_CALL);
export const localActs = proxyLocalActivities<Activities>(LOCAL_READ);
