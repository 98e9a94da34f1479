import { ActivityCancellationType, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';

/**
 * Model calls: one try per activity (the workflow retries, see model-call.ts), 10 minutes per
 * try, heartbeats every second (10 s of silence is a lost worker), and cancellation waits for
 * the call to be aborted so a stopped attempt's model call really stops.
 */
export const MODEL_CALL: ActivityOptions = {
  startToCloseTimeout: '10m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { maximumAttempts: 1 },
};

/** Command and schema checks: up to 30 minutes, heartbeats, 2 tries (a lost worker is retried). */
export const CHECK_CALL: ActivityOptions = {
  startToCloseTimeout: '30m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1s', maximumAttempts: 2 },
};

/**
 * Tool calls and workspace set-up: up to 15 minutes, heartbeats, 3 tries. A tool call the
 * worker finished is never repeated (its completion is in history); one a lost worker did not
 * finish is retried.
 */
export const TOOL_CALL: ActivityOptions = {
  startToCloseTimeout: '15m',
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1s', maximumAttempts: 3, nonRetryableErrorTypes: ['WorkspaceError'] },
};

export const acts = proxyActivities<Activities>(MODEL_CALL);
