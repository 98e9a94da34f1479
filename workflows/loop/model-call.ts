import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  isCancellation,
  sleep,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { ModelFailureDetails } from '../../activities/model-errors';
import type { ModelPrice } from '../../common/pricing';
import type { Usage } from '../../common/usage';
import { estimateInputTokens, planCall, type BudgetLimits, type BudgetUse } from '../../common/budget';

/** How often a model call is tried before the run escalates (first try included). */
export const MAX_MODEL_TRIES = 5;

export type CallOutcome<T> =
  { ok: true; value: T } | { ok: false; stopReason: 'tokens' | 'cost' | 'model_error'; detail: string };

/** What a budgeted call needs of its run. */
export interface BudgetedRun {
  limits(): BudgetLimits;
  used(): BudgetUse;
  charge(role: 'worker' | 'checker', usage: Usage): void;
}

export interface BudgetedCall<T extends { usage: Usage }> {
  what: string;
  /** The run whose budget pays: a `LoopRun`. */
  run: BudgetedRun;
  role: 'worker' | 'checker';
  /** Characters of the prompt (system + messages), for the input estimate. */
  inputChars: number;
  requestedMaxTokens: number;
  price: ModelPrice;
  /** Makes one try with the max_tokens the budget allows. */
  invoke: (maxTokens: number, tryNo: number) => Promise<T>;
}

/**
 * One model call under the run's budget. Before every try (retries included) the remaining
 * tokens and dollars must cover the worst case (estimated input + max_tokens); max_tokens is
 * lowered to what the budget can pay, and a call it cannot pay is not made. Every try's usage
 * is charged, also for a try that failed, timed out, lost its worker or was cancelled after the
 * provider answered (from the failure's details, or the last heartbeat's). Retryable failures
 * (429/5xx/529, connection, a broken stream, the call's idle or total limit) retry with backoff or the provider's retry-after, up to
 * MAX_MODEL_TRIES; a non-retryable one (401, 400, 404) returns at once as `model_error`.
 * The activity itself runs with one attempt: the workflow owns these retries, so the budget is
 * checked before each and each one's usage is seen.
 */
export async function callWithinBudget<T extends { usage: Usage }>(call: BudgetedCall<T>): Promise<CallOutcome<T>> {
  for (let tryNo = 1; ; tryNo++) {
    const plan = planCall(call.run.limits(), call.run.used(), {
      inputTokens: estimateInputTokens(call.inputChars),
      requested: call.requestedMaxTokens,
      price: call.price,
    });
    if (!plan.ok) {
      const unit =
        plan.stop === 'tokens'
          ? `${plan.needed} tokens and ${plan.left} are left`
          : `$${plan.needed.toFixed(4)} and $${plan.left.toFixed(4)} is left`;
      return { ok: false, stopReason: plan.stop, detail: `${call.what} not made: it may need up to ${unit}` };
    }
    try {
      const value = await call.invoke(plan.maxTokens, tryNo);
      call.run.charge(call.role, value.usage);
      return { ok: true, value };
    } catch (err) {
      if (isCancellation(err)) {
        // A call cancelled after the provider answered (wall time ran out) still costs what it reported.
        const usage = cancelledUsage(err);
        if (usage) call.run.charge(call.role, usage);
        throw err;
      }
      const failure = readFailure(err);
      if (failure.usage) call.run.charge(call.role, failure.usage);
      if (!failure.retryable)
        return { ok: false, stopReason: 'model_error', detail: `${call.what} failed: ${failure.message}` };
      if (tryNo >= MAX_MODEL_TRIES)
        return {
          ok: false,
          stopReason: 'model_error',
          detail: `${call.what} failed ${tryNo} times; last error: ${failure.message}`,
        };
      await sleep(failure.retryDelayMs ?? Math.min(30_000, 1000 * 2 ** (tryNo - 1)));
    }
  }
}

interface FailureInfo {
  retryable: boolean;
  message: string;
  usage?: Usage;
  retryDelayMs?: number;
}

function readFailure(err: unknown): FailureInfo {
  if (!(err instanceof ActivityFailure)) throw err;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    const details = (cause.details?.[0] ?? {}) as ModelFailureDetails;
    return {
      retryable: !cause.nonRetryable,
      message: cause.message,
      usage: details.usage ?? undefined,
      retryDelayMs: details.retryAfterMs ?? undefined,
    };
  }
  if (cause instanceof TimeoutFailure) {
    const beat = (cause.lastHeartbeatDetails ?? {}) as { usage?: Usage };
    return {
      retryable: true,
      message: `the activity timed out (${String(cause.timeoutType)}): was its worker lost?`,
      usage: beat.usage,
    };
  }
  return { retryable: true, message: cause?.message ?? err.message };
}

/** The usage a cancelled model call reported before it stopped (the activity puts it in the cancellation's details). */
function cancelledUsage(err: unknown): Usage | undefined {
  const cancelled = err instanceof ActivityFailure ? err.cause : err;
  if (!(cancelled instanceof CancelledFailure)) return undefined;
  return ((cancelled.details?.[0] ?? {}) as ModelFailureDetails).usage ?? undefined;
}
