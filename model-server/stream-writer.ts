import type { ServerResponse } from 'node:http';
import type { ScriptedUsage } from './reply';
import type { StreamFault } from './script';
import { formatSse, type StreamEvent } from './sse';

/** A streamed answer: its events, the wait between them, and what goes wrong. */
export interface StreamPlan {
  events: StreamEvent[];
  eventDelayMs?: number;
  fault?: StreamFault;
}

/** What a streamed answer has put on the wire so far (updated as it goes). */
export interface StreamProgress {
  /** SSE events written and flushed, the faulty one included. */
  events: number;
  /** The usage last reported on the wire: message_start's, then message_delta's. */
  usage?: ScriptedUsage;
  /** What went wrong, e.g. `drop after 3 events`. */
  fault?: string;
}

/** Data that is not JSON, cut in the middle of a delta, as a broken proxy might send it. */
const MALFORMED =
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n';

/**
 * Writes a streamed answer event by event, each flushed before the next (so a fault after N
 * events comes after the client could read those N), waiting `eventDelayMs` between events,
 * and breaks as `plan.fault` says. `progress` is updated as events go out, so a test can wait
 * for `message_start` to be sent. Resolves once the answer is over: ended, dropped, or, for a
 * stall, when the client leaves or the server closes.
 */
export async function writeStream(
  res: ServerResponse,
  plan: StreamPlan,
  progress: StreamProgress,
  headers: Record<string, string>,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...headers });
  res.flushHeaders();
  const faultAt = plan.fault ? faultIndex(plan.fault, plan.events) : Infinity;
  for (const [i, event] of plan.events.entries()) {
    if (i === faultAt) break;
    if (i > 0 && plan.eventDelayMs && !(await pause(res, plan.eventDelayMs))) return;
    if (!(await send(res, formatSse(event)))) return;
    progress.events += 1;
    const usage = usageOf(event);
    if (usage) progress.usage = usage;
  }
  const fault = plan.fault;
  if (!fault) {
    res.end();
    return;
  }
  progress.fault = `${fault.kind} after ${Math.min(faultAt, plan.events.length)} events`;
  switch (fault.kind) {
    case 'drop':
      res.socket?.destroy();
      return;
    case 'end':
      res.end();
      return;
    case 'stall':
      await closed(res);
      return;
    case 'malformed':
      if (await send(res, MALFORMED)) progress.events += 1;
      res.end();
      return;
    case 'error': {
      const error = fault.error ?? { type: 'overloaded_error', message: 'Overloaded (scripted stream error)' };
      if (await send(res, formatSse({ event: 'error', data: { type: 'error', error } }))) progress.events += 1;
      res.end();
      return;
    }
  }
}

/** The index of the first event not sent: a count, or one past the first event of that name. */
function faultIndex(fault: StreamFault, events: StreamEvent[]): number {
  if (typeof fault.after === 'number') return Math.min(fault.after, events.length);
  const at = events.findIndex((e) => e.event === fault.after);
  return at < 0 ? events.length : at + 1;
}

function usageOf(event: StreamEvent): ScriptedUsage | undefined {
  if (event.event === 'message_start') return { ...(event.data.message as { usage: ScriptedUsage }).usage };
  if (event.event === 'message_delta') return { ...(event.data.usage as ScriptedUsage) };
  return undefined;
}

/** Writes `text` and waits until it is flushed; false when the connection is gone. */
function send(res: ServerResponse, text: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = () => resolve(false);
    res.once('close', onClose);
    res.write(text, (err) => {
      res.off('close', onClose);
      resolve(!err && !res.destroyed);
    });
  });
}

/** Waits `ms`; false when the connection closed meanwhile. */
function pause(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

function closed(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => res.once('close', () => resolve()));
}
