import { temporal } from '@temporalio/proto';
import { eventBytes } from './measure-history';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Bytes and events of one kind of event in a history (an activity's events named by its type). */
export interface BreakdownRow {
  what: string;
  events: number;
  bytes: number;
}

const eventTypeName = (e: HistoryEvent): string =>
  (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? 'unknown').replace(/^EVENT_TYPE_/, '').toLowerCase();

/**
 * Where a history's bytes go: its events grouped by type, an activity's scheduled, started and
 * closed events under its activity type (`activity <type>`), a marker under its name, and the
 * search-attribute upserts together; the largest first. For the bench's "history per run" target.
 */
export function historyBreakdown(history: History): BreakdownRow[] {
  const activityOf = new Map<string, string>();
  const rows = new Map<string, BreakdownRow>();
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) activityOf.set(String(e.eventId), scheduled.activityType?.name ?? '?');
    const ref =
      e.activityTaskStartedEventAttributes?.scheduledEventId ??
      e.activityTaskCompletedEventAttributes?.scheduledEventId ??
      e.activityTaskFailedEventAttributes?.scheduledEventId ??
      e.activityTaskTimedOutEventAttributes?.scheduledEventId;
    const what = scheduled
      ? `activity ${scheduled.activityType?.name ?? '?'}`
      : ref !== undefined && ref !== null
        ? `activity ${activityOf.get(String(ref)) ?? '?'}`
        : e.markerRecordedEventAttributes
          ? `marker ${e.markerRecordedEventAttributes.markerName ?? '?'}`
          : eventTypeName(e);
    const row = rows.get(what) ?? { what, events: 0, bytes: 0 };
    row.events += 1;
    row.bytes += eventBytes(e);
    rows.set(what, row);
  }
  return [...rows.values()].sort((a, b) => b.bytes - a.bytes);
}

/** The breakdown as lines: bytes, events and share of the whole. */
export function formatBreakdown(rows: BreakdownRow[]): string[] {
  const total = rows.reduce((s, r) => s + r.bytes, 0);
  const width = Math.max(...rows.map((r) => r.what.length));
  return rows.map(
    (r) =>
      `  ${r.what.padEnd(width)}  ${String(r.bytes).padStart(6)} B  ${String(r.events).padStart(3)} events  ${((100 * r.bytes) / total).toFixed(0).padStart(3)}%`,
  );
}
