import Anthropic from '@anthropic-ai/sdk';
import type { ModelTimeouts } from '../common/loop-spec';
import type { StreamUsage } from './model-usage';

/** Why a model call was cut short by the caller's side: a limit ran out, or it was cancelled. */
export type StreamCut = 'idle' | 'total' | 'cancelled';

/** What is known about a model call that did not end in a complete answer. */
export interface StreamFacts {
  /** Set when this side cut the call (the cause is then the SDK's abort error). */
  cut?: StreamCut;
  /** True when the response ended properly but without `message_stop` or a `stop_reason`: the answer is incomplete. */
  incomplete?: boolean;
  /** Whether the response's headers arrived. */
  connected: boolean;
  /** Stream events received (pings not counted). */
  events: number;
  elapsedMs: number;
  limits: ModelTimeouts;
}

/** A model call that failed, with what is known about its stream; `cause` is the SDK's error. */
export class ModelStreamError extends Error {
  constructor(
    readonly facts: StreamFacts,
    options: { cause: unknown },
  ) {
    super(facts.cut ? `model call cut: ${facts.cut}` : facts.incomplete ? 'the stream ended without a stop_reason' : String((options.cause as Error)?.message ?? options.cause), options);
    this.name = 'ModelStreamError';
  }
}

/** The call's limits, its cancellation, and where the usage the stream reports goes. */
export interface StreamControl {
  limits: ModelTimeouts;
  /** The activity's cancellation. */
  signal?: AbortSignal;
  usage: StreamUsage;
  /** Called each time the reported usage changes (message_start, then message_delta). */
  onUsage?: () => void;
}

/**
 * Streams one Messages API call with the call's own limits: `limits.totalMs` for the whole call
 * and `limits.idleMs` for the wait for the headers and for each next event, both enforced with
 * an AbortController of this call (the SDK's request timeout is set past the total deadline, so
 * it never cuts first). Every event's usage goes to `control.usage`. Resolves with the complete
 * message; a call that breaks, is cut or ends without a `stop_reason` rejects with a
 * {@link ModelStreamError} whose cause is the SDK's error.
 */
export async function streamMessage(
  anthropic: Anthropic,
  body: Anthropic.MessageStreamParams,
  headers: Record<string, string>,
  control: StreamControl,
): Promise<Anthropic.Message> {
  const { limits } = control;
  const abort = new AbortController();
  const started = Date.now();
  const facts: StreamFacts = { connected: false, events: 0, elapsedMs: 0, limits };
  let lastSign = started;
  const cut = (why: StreamCut) => {
    if (facts.cut) return;
    facts.cut = why;
    abort.abort();
  };
  const total = setTimeout(() => cut('total'), limits.totalMs);
  // One timer for the idle limit, re-armed for what is left of it when it fires early.
  let idle: NodeJS.Timeout;
  const watchIdle = (ms: number) => {
    idle = setTimeout(() => {
      const quiet = Date.now() - lastSign;
      if (quiet >= limits.idleMs) cut('idle');
      else watchIdle(limits.idleMs - quiet);
    }, ms);
  };
  watchIdle(limits.idleMs);
  const onCancel = () => cut('cancelled');
  if (control.signal?.aborted) onCancel();
  control.signal?.addEventListener('abort', onCancel, { once: true });
  try {
    const stream = anthropic.messages.stream(body, { headers, signal: abort.signal, timeout: limits.totalMs + 60_000 });
    stream.on('connect', () => {
      facts.connected = true;
      lastSign = Date.now();
    });
    let stopped = false;
    stream.on('streamEvent', (event) => {
      facts.events += 1;
      if (event.type === 'message_stop') stopped = true;
      lastSign = Date.now();
      if (control.usage.observe(event)) control.onUsage?.();
    });
    let message: Anthropic.Message;
    try {
      message = await stream.finalMessage();
    } catch (err) {
      // The SDK's own complaint about a response that ended early has no cause; a broken transport's has one.
      const early = err instanceof Anthropic.AnthropicError && !(err instanceof Anthropic.APIError) && err.cause === undefined;
      if (early && !stopped && !facts.cut) facts.incomplete = true;
      throw new ModelStreamError(done(), { cause: err });
    }
    if (message.stop_reason === null || facts.cut) {
      facts.incomplete = true;
      throw new ModelStreamError(done(), { cause: new Error('the stream ended without a stop_reason') });
    }
    return message;
  } finally {
    clearTimeout(total);
    clearTimeout(idle!);
    control.signal?.removeEventListener('abort', onCancel);
  }

  function done(): StreamFacts {
    facts.elapsedMs = Date.now() - started;
    return facts;
  }
}
