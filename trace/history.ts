import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { Usage } from '../common/usage';
import { unmarked } from '../common/redact';

/** One workflow run's history, as `fetchHistory()` or `historyFromJSON` return it. */
export type History = temporal.api.history.v1.IHistory;
export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads;
type Failure = temporal.api.failure.v1.IFailure;

/** The `i`th payload, decoded with the default converter (JSON); undefined when absent or undecodable. */
export function decode<T>(payloads: Payloads | null | undefined, i = 0): T | undefined {
  const payload = payloads?.payloads?.[i];
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload<T>(payload);
  } catch {
    return undefined;
  }
}

type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

/** Seconds and nanos in ms; `seconds` may be a number, a Long or a string depending on who decoded it. */
function tsMs(ts: Timestamp): number | undefined {
  if (!ts) return undefined;
  const seconds = Number(ts.seconds == null ? 0 : String(ts.seconds));
  return seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/** When the event happened, in ms since the epoch. */
export function eventMs(event: HistoryEvent): number {
  return tsMs(event.eventTime) ?? 0;
}

/** A duration field (timer timeout) in ms. */
export function durationMs(d: Timestamp): number | undefined {
  return tsMs(d);
}

/** The summary the workflow gave an activity or timer (shown in the Web UI). */
export function summaryOf(event: HistoryEvent): string | null {
  const summary = event.userMetadata?.summary;
  if (!summary) return null;
  const text = decode<string>({ payloads: [summary] });
  return text == null ? null : unmarked(text);
}

/** The message of a failure: the activity's own error, not its wrapper. */
export function failureMessage(failure: Failure | null | undefined): string {
  if (!failure) return 'failed (no details)';
  const own = failure.message || failure.cause?.message || 'failed';
  return failure.cause?.message && failure.message && failure.cause.message !== failure.message
    ? `${own}: ${failure.cause.message}`
    : own;
}

/** Usage a failed model call reported (model-errors.ts puts it in the failure's details). */
export function failureUsage(failure: Failure | null | undefined): Usage | null {
  const details = decode<{ usage?: Usage | null }>(failure?.applicationFailureInfo?.details);
  return details?.usage ?? null;
}

/** The failure of a closed activity, whatever way it closed without a result. */
export function activityFailure(event: HistoryEvent): Failure | null | undefined {
  return event.activityTaskFailedEventAttributes?.failure ?? event.activityTaskTimedOutEventAttributes?.failure;
}

/** The id of the scheduled event a started/closed activity event belongs to. */
export function scheduledIdOf(event: HistoryEvent): string | undefined {
  const attrs =
    event.activityTaskCompletedEventAttributes ??
    event.activityTaskFailedEventAttributes ??
    event.activityTaskTimedOutEventAttributes ??
    event.activityTaskCanceledEventAttributes;
  return attrs?.scheduledEventId == null ? undefined : String(attrs.scheduledEventId);
}
