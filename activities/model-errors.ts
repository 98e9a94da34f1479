import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import type { Usage } from '../common/usage';

/** What a failed model call tells the workflow: the HTTP status, usage the provider reported, retry-after. */
export interface ModelFailureDetails {
  status?: number;
  usage?: Usage;
  retryAfterMs?: number;
}

/** Failure types the model activity raises; the workflow matches on these, never on classes. */
export const MODEL_RETRYABLE = 'ModelRetryableError';
export const MODEL_NON_RETRYABLE = 'ModelRequestError';

const RETRYABLE_STATUS = new Set([408, 409, 429]);

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

/**
 * Turns an Anthropic SDK error into an ApplicationFailure Temporal can act on:
 * 408, 409, 429, 5xx (529 included) and connection errors retry, honouring `retry-after`;
 * other 4xx (authentication, bad request, model not found) do not, and say what to fix.
 */
export function toModelFailure(err: unknown, context: { role: string; model: string; usage?: Usage }): unknown {
  if (err instanceof Anthropic.APIConnectionError) {
    return ApplicationFailure.create({
      type: MODEL_RETRYABLE,
      message: `cannot reach the model endpoint (${context.role}, ${context.model}): ${err.message}`,
      details: [{ usage: context.usage }],
    });
  }
  if (!(err instanceof Anthropic.APIError) || err.status === undefined) return err;
  const status = err.status;
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
