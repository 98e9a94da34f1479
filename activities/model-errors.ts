import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Usage } from '../common/usage';
import { ModelStreamError } from './model-stream';
import { FailureType } from '../common/failure-types';

/** What a failed model call tells the workflow: the HTTP status, usage the provider reported, retry-after. */
export interface ModelFailureDetails {
  status?: number;
  usage?: Usage;
  retryAfterMs?: number;
}

/** Failure types the model activity raises; the workflow matches on these, never on classes. */
export const MODEL_RETRYABLE = FailureType.ModelRetryable;
export const MODEL_NON_RETRYABLE = FailureType.ModelRequest;

/** Who made the failed call, the usage its stream reported, and whether Temporal asked for the cancellation. */
export interface ModelFailureContext {
  role: string;
  model: string;
  usage?: Usage;
  /** False when the activity was interrupted for another reason than a cancel request (worker shutdown, say). */
  cancelRequested?: boolean;
  /** Why Temporal interrupted the activity (`WORKER_SHUTDOWN`, `TIMED_OUT`, ...). */
  cancelReason?: string;
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);
/** Error types of an SSE `error` event that retrying cannot fix. */
const NON_RETRYABLE_TYPES = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'billing_error']);

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

const secs = (ms: number) => `${Math.round(ms / 100) / 10}s`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Turns any failure of a model call into what Temporal acts on, always with the usage the
 * endpoint reported so far in its details (the workflow charges it):
 * - 408, 409, 429, 5xx (529 included), connection errors, a broken or malformed stream, an SSE
 *   `error` event of a passing kind (overloaded, api_error), a stream that ended without a
 *   `stop_reason`, the idle timeout and the total deadline retry (`ModelRetryableError`),
 *   honouring `retry-after`;
 * - other 4xx (authentication, bad request, model not found), and SSE errors of those kinds,
 *   do not (`ModelRequestError`), and say what to fix;
 * - a cancellation Temporal asked for is a CancelledFailure whose details carry the usage.
 */
export function toModelFailure(err: unknown, context: ModelFailureContext): ApplicationFailure | CancelledFailure {
  const facts = err instanceof ModelStreamError ? err.facts : undefined;
  const cause = err instanceof ModelStreamError ? err.cause : err;
  const who = `(${context.role}, ${context.model})`;
  const seen = facts ? ` after ${plural(facts.events, 'event')} in ${secs(facts.elapsedMs)}` : '';
  const usage = context.usage;
  const retry = (message: string, extra: Omit<ModelFailureDetails, 'usage'> = {}) =>
    ApplicationFailure.create({ type: MODEL_RETRYABLE, message, details: [{ ...extra, usage } satisfies ModelFailureDetails], nextRetryDelay: extra.retryAfterMs });

  if (facts?.cut === 'cancelled') {
    if (context.cancelRequested === false) return retry(`model call interrupted${seen} ${who}: ${context.cancelReason ?? 'the activity was stopped'}, not a cancel request`);
    return new CancelledFailure(`model call cancelled${seen} ${who}`, [{ usage } satisfies ModelFailureDetails]);
  }
  if (facts?.cut === 'idle') {
    const what = facts.connected ? (facts.events ? 'no stream event' : 'no event after the headers') : 'no response headers';
    return retry(`model stream idle: ${what} for ${secs(facts.limits.idleMs)} (the idle limit)${seen} ${who}`);
  }
  if (facts?.cut === 'total') return retry(`model call passed its total deadline of ${secs(facts.limits.totalMs)}${seen} ${who}`);
  if (facts?.incomplete) return retry(`model stream ended without a stop_reason${seen} ${who}: the answer is incomplete`);
  if (cause instanceof Anthropic.APIConnectionError) return retry(`cannot reach the model endpoint ${who}: ${cause.message}`);
  if (cause instanceof Anthropic.APIError && cause.status === undefined && cause.type) {
    // An SSE `error` event: the stream was answered, then reported an error of this type.
    const message = `model stream reported ${cause.type}${seen} ${who}: ${cause.apiMessage ?? cause.message}`;
    if (!NON_RETRYABLE_TYPES.has(cause.type)) return retry(message);
    return ApplicationFailure.create({ type: MODEL_NON_RETRYABLE, nonRetryable: true, message, details: [{ usage } satisfies ModelFailureDetails] });
  }
  if (cause instanceof Anthropic.APIError && cause.status !== undefined) return httpFailure(cause, cause.status, context);
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
  if (inner instanceof SyntaxError) return retry(`model stream sent an event that is not JSON${seen} ${who}: ${inner.message}`);
  const reason = cause instanceof Error ? cause.message : String(cause);
  return retry(`model stream broke${seen} ${who}: ${reason}`);
}

function httpFailure(err: InstanceType<typeof Anthropic.APIError>, status: number, context: ModelFailureContext): ApplicationFailure {
  const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
  const hint =
    status === 401 || status === 403
      ? ': check ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL)'
      : status === 404
        ? `: check the model id ${context.model} (LOOPWRIGHT_${context.role.toUpperCase()}_MODEL)`
        : status === 400 || status === 413 || status === 422
          ? ': check the request (prompt size, max_tokens, tool definitions); retrying will not help'
          : '';
  const retryAfter = retryable ? retryAfterMs(err.headers) : undefined;
  return ApplicationFailure.create({
    type: retryable ? MODEL_RETRYABLE : MODEL_NON_RETRYABLE,
    nonRetryable: !retryable,
    message: `model call failed with HTTP ${status} (${context.role}, ${context.model}): ${err.message}${hint}`,
    // nextRetryDelay does not survive the trip to the workflow's failure object, so the
    // workflow (which owns model retries) reads the delay from the details.
    details: [{ status, usage: context.usage, retryAfterMs: retryAfter } satisfies ModelFailureDetails],
    nextRetryDelay: retryAfter,
  });
}
