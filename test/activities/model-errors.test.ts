import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MODEL_NON_RETRYABLE, MODEL_RETRYABLE, toModelFailure } from '../../activities/model-errors';
import { anthropicCallError } from '../../activities/providers/anthropic/faults';

const CONTEXT = { role: 'worker', model: 'claude-sonnet-4-6' };

const apiError = (status: number, headers: Record<string, string> = {}, message = 'boom') =>
  Anthropic.APIError.generate(
    status,
    { type: 'error', error: { type: 'api_error', message } },
    undefined,
    new Headers(headers),
  );

/** The ApplicationFailure `toModelFailure` makes of the SDK's `err`, read by the Anthropic adapter (fails the test when it is anything else). */
function failureOf(err: unknown): ApplicationFailure {
  const result = toModelFailure(anthropicCallError(err), CONTEXT);
  expect(result).toBeInstanceOf(ApplicationFailure);
  return result as ApplicationFailure;
}

describe('toModelFailure', () => {
  test('builds real SDK errors of the expected classes (guards the fixtures)', () => {
    expect(apiError(401)).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(apiError(429)).toBeInstanceOf(Anthropic.RateLimitError);
    expect(apiError(529)).toBeInstanceOf(Anthropic.APIError);
    expect(apiError(529).status).toBe(529);
  });

  test.each([401, 403, 400, 404, 422])(
    'HTTP %d is a non-retryable ModelRequestError with the status and role',
    (status) => {
      const failure = failureOf(apiError(status, {}, 'request rejected'));
      expect(failure.type).toBe(MODEL_NON_RETRYABLE);
      expect(MODEL_NON_RETRYABLE).toBe('ModelRequestError');
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toContain(`HTTP ${status} (worker, claude-sonnet-4-6)`);
      expect(failure.message).toContain('request rejected');
      expect(failure.details).toEqual([{ status }]);
      expect(failure.nextRetryDelay).toBeUndefined();
    },
  );

  test.each([401, 403])('HTTP %d hints at the API key', (status) => {
    expect(failureOf(apiError(status)).message).toMatch(/check ANTHROPIC_API_KEY/);
  });

  test('HTTP 404 hints at the model id and the variable that sets it for the role', () => {
    const message = failureOf(apiError(404)).message;
    expect(message).toContain('check the model id claude-sonnet-4-6');
    expect(message).toContain('LOOPWRIGHT_WORKER_MODEL');
    const checker = toModelFailure(anthropicCallError(apiError(404)), {
      role: 'checker',
      model: 'm',
    }) as ApplicationFailure;
    expect(checker.message).toContain('LOOPWRIGHT_CHECKER_MODEL');
  });

  test.each([408, 409, 429, 500, 502, 503, 529])('HTTP %d is a retryable ModelRetryableError', (status) => {
    const failure = failureOf(apiError(status));
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(MODEL_RETRYABLE).toBe('ModelRetryableError');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain(`HTTP ${status}`);
    expect(failure.details).toEqual([{ status }]);
  });

  test('HTTP 429 with retry-after: 7 asks Temporal to retry after 7000 ms', () => {
    expect(failureOf(apiError(429, { 'retry-after': '7' })).nextRetryDelay).toBe(7000);
  });

  test('retry-after-ms takes precedence over retry-after', () => {
    expect(failureOf(apiError(529, { 'retry-after-ms': '1500', 'retry-after': '7' })).nextRetryDelay).toBe(1500);
  });

  test('an HTTP-date retry-after becomes the delay until that date', () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    const delay = failureOf(apiError(503, { 'retry-after': at })).nextRetryDelay as number;
    expect(delay).toBeGreaterThan(25_000);
    expect(delay).toBeLessThanOrEqual(30_000);
  });

  test('without retry-after, or with an unreadable one, Temporal keeps its own backoff', () => {
    expect(failureOf(apiError(500)).nextRetryDelay).toBeUndefined();
    expect(failureOf(apiError(429, { 'retry-after': 'later' })).nextRetryDelay).toBeUndefined();
  });

  test('a connection error is a retryable ModelRetryableError that says the endpoint is unreachable', () => {
    const failure = failureOf(new Anthropic.APIConnectionError({ message: 'ECONNREFUSED 127.0.0.1:9' }));
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe(
      'cannot reach the model endpoint (worker, claude-sonnet-4-6): ECONNREFUSED 127.0.0.1:9',
    );
  });

  test('a connection timeout is retryable too', () => {
    expect(failureOf(new Anthropic.APIConnectionTimeoutError()).type).toBe(MODEL_RETRYABLE);
  });

  test('any other error of a model call (a broken stream, say) is retryable and carries the usage reported so far', () => {
    const usage = { inputTokens: 1000, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.003015 };
    const failure = toModelFailure(new TypeError('terminated'), { ...CONTEXT, usage }) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(MODEL_RETRYABLE);
    expect(failure.message).toBe('model stream broke (worker, claude-sonnet-4-6): terminated');
    expect(failure.details).toEqual([{ usage }]);
    expect((toModelFailure('a string', CONTEXT) as ApplicationFailure).type).toBe(MODEL_RETRYABLE);
  });

  test('an HTTP error carries the usage too', () => {
    const usage = { inputTokens: 5, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
    expect(
      (toModelFailure(anthropicCallError(apiError(500)), { ...CONTEXT, usage }) as ApplicationFailure).details,
    ).toEqual([{ status: 500, usage }]);
  });

  test('a cancellation Temporal asked for is a CancelledFailure whose details carry the usage; any other interruption is retryable', () => {
    const usage = { inputTokens: 1000, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.003015 };
    const cut = anthropicCallError(new Anthropic.APIUserAbortError(), {
      cut: 'cancelled',
      connected: true,
      events: 1,
      elapsedMs: 2_300,
      limits: { totalMs: 600_000, idleMs: 60_000 },
    });
    const cancelled = toModelFailure(cut, { ...CONTEXT, usage, cancelRequested: true });
    expect(cancelled).toBeInstanceOf(CancelledFailure);
    expect(cancelled.message).toBe('model call cancelled after 1 event in 2.3s (worker, claude-sonnet-4-6)');
    expect((cancelled as CancelledFailure).details).toEqual([{ usage }]);
    const shutdown = toModelFailure(cut, {
      ...CONTEXT,
      usage,
      cancelRequested: false,
      cancelReason: 'WORKER_SHUTDOWN',
    }) as ApplicationFailure;
    expect(shutdown).toBeInstanceOf(ApplicationFailure);
    expect(shutdown.type).toBe(MODEL_RETRYABLE);
    expect(shutdown.message).toBe(
      'model call interrupted after 1 event in 2.3s (worker, claude-sonnet-4-6): WORKER_SHUTDOWN, not a cancel request',
    );
    expect(shutdown.details).toEqual([{ usage }]);
  });
});
