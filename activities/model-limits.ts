import type { ModelTimeouts } from '../common/loop-spec';
import type { StreamCut, StreamFacts } from './model-port';

/** What a provider's stream tells the watch, and what it learns from it. */
export interface CallWatch {
  /** For the provider's request: aborts when a limit runs out or the activity is cancelled. */
  readonly signal: AbortSignal;
  /** The response's headers arrived. */
  connected(): void;
  /** One stream event arrived (keep-alives not counted). */
  event(): void;
  /** Why this side cut the call, once it has. */
  cut(): StreamCut | undefined;
  /** What is known of the call so far (its elapsed time as of now). */
  facts(extra?: { incomplete?: boolean }): StreamFacts;
}

/**
 * Runs one streamed model call under its own limits, for any provider: `limits.totalMs` for the
 * whole call and `limits.idleMs` for the wait for the headers and for each next event, both
 * enforced by aborting `watch.signal`, which also aborts when `cancel` (the activity's
 * cancellation) does. The provider's stream reports its headers and events to the watch and
 * builds its failure from `watch.facts()`; the timers are cleared however `run` ends. The
 * provider's own request timeout must be set past the total deadline, so it never cuts first.
 */
export async function withCallLimits<T>(
  limits: ModelTimeouts,
  cancel: AbortSignal | undefined,
  run: (watch: CallWatch) => Promise<T>,
): Promise<T> {
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
  if (cancel?.aborted) onCancel();
  cancel?.addEventListener('abort', onCancel, { once: true });
  try {
    return await run({
      signal: abort.signal,
      connected: () => {
        facts.connected = true;
        lastSign = Date.now();
      },
      event: () => {
        facts.events += 1;
        lastSign = Date.now();
      },
      cut: () => facts.cut,
      facts: (extra = {}) => {
        facts.elapsedMs = Date.now() - started;
        if (extra.incomplete) facts.incomplete = true;
        return facts;
      },
    });
  } finally {
    clearTimeout(total);
    clearTimeout(idle!);
    cancel?.removeEventListener('abort', onCancel);
  }
}
