import Anthropic from '@anthropic-ai/sdk';
import { faultOf, retryAfterMs } from '../../model-errors';
import { ModelCallError, type ModelFault, type StreamFacts } from '../../model-port';

/** What to check when the endpoint refuses the credentials. */
const CREDENTIALS = 'ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL)';

/** Error types of an SSE `error` event that retrying cannot fix. */
const NON_RETRYABLE_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'billing_error',
]);

/**
 * An error of the Anthropic SDK in Loopwright's terms: a connection error is `unreachable`; an
 * SSE `error` event (an APIError without a status) is a `stream-error`, retryable unless its
 * type is one retrying cannot fix; an HTTP error is `http` with its status and `retry-after`;
 * anything else is read as any provider's error would be ({@link faultOf}).
 */
export function anthropicFault(err: unknown): ModelFault {
  if (err instanceof Anthropic.APIConnectionError) return { kind: 'unreachable', message: err.message };
  if (err instanceof Anthropic.APIError && err.status === undefined && err.type) {
    return {
      kind: 'stream-error',
      errorType: err.type,
      message: err.apiMessage ?? err.message,
      retryable: !NON_RETRYABLE_TYPES.has(err.type),
    };
  }
  if (err instanceof Anthropic.APIError && err.status !== undefined) {
    return {
      kind: 'http',
      status: err.status,
      message: err.message,
      retryAfterMs: retryAfterMs(err.headers),
      credentials: CREDENTIALS,
    };
  }
  return faultOf(err);
}

/** An SDK error (and what is known of its stream) as the port's {@link ModelCallError}. */
export function anthropicCallError(err: unknown, facts?: StreamFacts): ModelCallError {
  return err instanceof ModelCallError ? err : new ModelCallError(anthropicFault(err), facts, { cause: err });
}
