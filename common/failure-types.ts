import { ApplicationFailure } from '@temporalio/common';

/**
 * The type of every ApplicationFailure an activity raises on purpose: activities raise these,
 * and every retry policy (`nonRetryableErrorTypes`) and every workflow that matches a failure
 * names them from here, never as a literal. A type is part of recorded histories: renaming one
 * changes what a replayed run matches, so add types, never rename them. The names of
 * LoopwrightError classes (`InputError`, `UsageError`, `ConfigError`) are their class names,
 * which activities pass on as the type (test/common/failure-types.test.ts checks they agree).
 */
export const FailureType = {
  /** The run's workspace or repository is not what the activity needs (a missing commit, an unknown tool). */
  Workspace: 'WorkspaceError',
  /** A discovery source cannot list work (no such folder, no tests reported, a timeout). */
  Discovery: 'DiscoveryError',
  /** The worker has no working sandbox, so it refuses to run the agent's commands. */
  SandboxUnavailable: 'SandboxUnavailable',
  /** The worker's trust files (allowed signers) are missing or too large. */
  Trust: 'TrustError',
  /** The judge cannot build a sound prompt. */
  Judge: 'JudgeError',
  /** An effect cannot be applied (its target moved, the landing was refused). */
  Effect: 'EffectError',
  /** A report cannot be written where it was asked. */
  Report: 'ReportError',
  /** The loop spec or the worker's settings are wrong (a LoopwrightError's class name). */
  Config: 'ConfigError',
  /** A run's input fails its loop's schema (a LoopwrightError's class name). */
  Input: 'InputError',
  /** A request that cannot be served as asked (a LoopwrightError's class name). */
  Usage: 'UsageError',
  /** A model call that may succeed when retried (408, 409, 429, 5xx, a broken stream). */
  ModelRetryable: 'ModelRetryableError',
  /** A model call that retrying cannot fix (other 4xx, an invalid request). */
  ModelRequest: 'ModelRequestError',
} as const;

/** One of the failure types of {@link FailureType}. */
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** A non-retryable ApplicationFailure of `type`: the workflow sees `type` and `message`, Temporal does not retry it. */
export function nonRetryableFailure(type: FailureType, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, nonRetryable: true, message });
}
