import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Usage } from '../common/usage';
import { FailureType } from '../common/failure-types';
import { ModelCallError, type ModelFault } from './model-port';

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

/** The delay an HTTP response asks for before a retry (`retry-after-ms`, else `retry-after` in seconds or as a date); for adapters. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
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
 * Any error as a fault, when no adapter knew it better: an event that is not JSON (a SyntaxError,
 * or an error caused by one) is `not-json`, anything else `broken`.
 */
export function faultOf(err: unknown): ModelFault {
  const inner = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  if (inner instanceof SyntaxError) return { kind: 'not-json', message: inner.message };
  return { kind: 'broken', message: err instanceof Error ? err.message : String(err) };
}

/**
 * Turns any failure of a model call into what Temporal acts on, always with the usage the
 * endpoint reported so far in its details (the workflow charges it). It reads the port's
 * {@link ModelCallError} (any other error is read with {@link faultOf}), so it is the same for
 * every provider:
 * - 408, 409, 429, 5xx (529 included), an unreachable endpoint, a broken or malformed stream, a
 *   stream error the adapter calls retryable (overloaded, api_error), a stream that ended without
 *   a stop reason, the idle timeout and the total deadline retry (`ModelRetryableError`),
 *   honouring `retry-after`;
 * - other 4xx (authentication, bad request, model not found), and stream errors of those kinds,
 *   do not (`ModelRequestError`), and say what to fix;
 * - a cancellation Temporal asked for is a CancelledFailure whose details carry the usage.
 */
export function toModelFailure(err: unknown, context: ModelFailureContext): ApplicationFailure | CancelledFailure {
  const facts = err instanceof ModelCallError ? err.facts : undefined;
  const fault = err instanceof ModelCallError ? err.fault : faultOf(err);
  const who = `(${context.role}, ${context.model})`;
  const seen = facts ? ` after ${plural(facts.events, 'event')} in ${secs(facts.elapsedMs)}` : '';
  const usage = context.usage;
  const retry = (message: string, extra: Omit<ModelFailureDetails, 'usage'> = {}) =>
    ApplicationFailure.create({
      type: MODEL_RETRYABLE,
      message,
      details: [{ ...extra, usage } satisfies ModelFailureDetails],
      nextRetryDelay: extra.retryAfterMs,
    });

  if (facts?.cut === 'cancelled') {
    if (context.cancelRequested === false)
      return retry(
        `model call interrupted${seen} ${who}: ${context.cancelReason ?? 'the activity was stopped'}, not a cancel request`,
      );
    return new CancelledFailure(`model call cancelled${seen} ${who}`, [{ usage } satisfies ModelFailureDetails]);
  }
  if (facts?.cut === 'idle') {
    const what = facts.connected
      ? facts.events
        ? 'no stream event'
        : 'no event after the headers'
      : 'no response headers';
    return retry(`model stream idle: ${what} for ${secs(facts.limits.idleMs)} (the idle limit)${seen} ${who}`);
  }
  if (facts?.cut === 'total')
    return retry(`model call passed its total deadline of ${secs(facts.limits.totalMs)}${seen} ${who}`);
  if (facts?.incomplete)
    return retry(`model stream ended without a stop_reason${seen} ${who}: the answer is incomplete`);
  switch (fault.kind) {
    case 'unreachable':
      return retry(`cannot reach the model endpoint ${who}: ${fault.message}`);
    case 'stream-error': {
      // The stream was answered, then reported an error of this type.
      const message = `model stream reported ${fault.errorType}${seen} ${who}: ${fault.message}`;
      if (fault.retryable) return retry(message);
      return ApplicationFailure.create({
        type: MODEL_NON_RETRYABLE,
        nonRetryable: true,
        message,
        details: [{ usage } satisfies ModelFailureDetails],
      });
    }
    case 'http':
      return httpFailure(fault, context);
    case 'not-json':
      return retry(`model stream sent an event that is not JSON${seen} ${who}: ${fault.message}`);
    case 'broken':
      return retry(`model stream broke${seen} ${who}: ${fault.message}`);
  }
}

function httpFailure(fault: Extract<ModelFault, { kind: 'http' }>, context: ModelFailureContext): ApplicationFailure {
  const { status } = fault;
  const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
  const hint =
    status === 401 || status === 403
      ? `: check ${fault.credentials ?? "the provider's credentials"}`
      : status === 404
        ? `: check the model id ${context.model} (LOOPWRIGHT_${context.role.toUpperCase()}_MODEL)`
        : status === 400 || status === 413 || status === 422
          ? ': check the request (prompt size, max_tokens, tool definitions); retrying will not help'
          : '';
  const retryAfter = retryable ? fault.retryAfterMs : undefined;
  return ApplicationFailure.create({
    type: retryable ? MODEL_RETRYABLE : MODEL_NON_RETRYABLE,
    nonRetryable: !retryable,
    message: `model call failed with HTTP ${status} (${context.role}, ${context.model}): ${fault.message}${hint}`,
    // nextRetryDelay does not survive the trip to the workflow's failure object, so the
    // workflow (which owns model retries) reads the delay from the details.
    details: [{ status, usage: context.usage, retryAfterMs: retryAfter } satisfies ModelFailureDetails],
    nextRetryDelay: retryAfter,
  });
}
