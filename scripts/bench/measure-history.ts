import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Temporal's default hard limit on one workflow history's size (limit.historySize.error). */
export const HISTORY_LIMIT_BYTES = 50 * 1024 * 1024;
/** Temporal's default hard limit on one workflow history's event count (limit.historyCount.error). */
export const HISTORY_LIMIT_EVENTS = 51_200;

/** Bytes and events of a stretch of history. */
export interface Segment {
  bytes: number;
  events: number;
}

/** One model turn: its model call and the tool calls it led to, up to the next model call. */
export interface TurnMeasure extends Segment {
  /** 1-based turn number, in the order the model-turn activities were scheduled. */
  turn: number;
}

/** A history cut into what came before the first model turn, the turns, and what came after. */
export interface HistoryMeasure extends Segment {
  /** Events before the first model turn (start, set-up activities, search attributes). */
  setup: Segment;
  turns: TurnMeasure[];
  /** Events after the last turn's workflow task: checks, the workflow's result. */
  tail: Segment;
}

/** The encoded size of one history event, as the server stores and sends it. */
export function eventBytes(event: HistoryEvent): number {
  return temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
}

/** The whole history encoded, event by event (for "does this text appear in history" checks). */
export function encodedHistory(history: History): Buffer {
  return Buffer.concat((history.events ?? []).map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish()));
}

function segment(events: HistoryEvent[]): Segment {
  return { bytes: events.reduce((sum, e) => sum + eventBytes(e), 0), events: events.length };
}

/**
 * Attributes a history's events to model turns. A turn starts at the ActivityTaskScheduled
 * event of a `turnActivityType` activity and runs to the next one; the last turn ends with the
 * first WorkflowTaskCompleted after its model call completed, and the rest is the tail. A
 * model call that is retried as a new activity counts as a turn of its own. Throws when the
 * history has no such activity.
 */
export function measureTurns(history: History, turnActivityType: string): HistoryMeasure {
  const events = history.events ?? [];
  const starts = events.flatMap((e, i) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name === turnActivityType ? [i] : [],
  );
  const lastStart = starts.at(-1);
  if (lastStart === undefined) {
    throw new Error(
      `no ${turnActivityType} activity in this history of ${events.length} events: is it the right workflow and activity type?`,
    );
  }
  const lastId = Number(events[lastStart]?.eventId);
  const completed = events.findIndex(
    (e) => Number(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? -1) === lastId,
  );
  const closing =
    completed < 0 ? -1 : events.findIndex((e, i) => i > completed && e.workflowTaskCompletedEventAttributes);
  const end = closing < 0 ? events.length : closing + 1;
  const turns = starts.map((from, k) => ({
    turn: k + 1,
    ...segment(events.slice(from, k + 1 < starts.length ? starts[k + 1] : end)),
  }));
  return { ...segment(events), setup: segment(events.slice(0, starts[0])), turns, tail: segment(events.slice(end)) };
}

/** Least-squares line through (turn, bytes): `bytes ≈ intercept + slope × turn`. */
export function fitLine(turns: readonly TurnMeasure[]): { intercept: number; slope: number } {
  const n = turns.length;
  if (n === 0) return { intercept: 0, slope: 0 };
  const mx = turns.reduce((s, t) => s + t.turn, 0) / n;
  const my = turns.reduce((s, t) => s + t.bytes, 0) / n;
  const sxx = turns.reduce((s, t) => s + (t.turn - mx) ** 2, 0);
  const slope = sxx === 0 ? 0 : turns.reduce((s, t) => s + (t.turn - mx) * (t.bytes - my), 0) / sxx;
  return { intercept: my - slope * mx, slope };
}

/**
 * How many turns until `fixed + Σ_{t=1..T} (intercept + slope·t)` reaches `limit`: the
 * history's size when turn t costs `intercept + slope·t` bytes (or events).
 */
export function turnsToReach(limit: number, fixed: number, line: { intercept: number; slope: number }): number {
  const room = limit - fixed;
  if (room <= 0) return 0;
  const { intercept: a, slope: g } = line;
  if (Math.abs(g) < 1e-9) return a <= 0 ? Infinity : Math.ceil(room / a);
  // g/2·T² + (a + g/2)·T − room = 0
  const b = a + g / 2;
  const disc = b * b + 2 * g * room;
  if (disc < 0) return Infinity; // shrinking turns that never add up to the limit
  return Math.ceil((-b + Math.sqrt(disc)) / g);
}
