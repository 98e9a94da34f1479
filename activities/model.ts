import Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import type { ContentBlockLike } from '../common/judge';
import { modelTimeouts, type ModelTimeouts } from '../common/loop-spec';
import type { ModelPrice } from '../common/pricing';
import type { Usage } from '../common/usage';
import { toModelFailure } from './model-errors';
import { createModelFetch } from './model-fetch';
import { heartbeatAlive, recordHeartbeat } from './model-heartbeat';
import { streamMessage } from './model-stream';
import { StreamUsage, usageOfMessage } from './model-usage';

export type ModelRole = 'worker' | 'checker' | 'proposer';

/** One model call: who asks (role, run, attempt) and what. */
export interface ModelRequest {
  role: ModelRole;
  model: string;
  workflowId: string;
  attempt: number;
  /** The agent turn within the attempt (multi-turn sessions). */
  turn?: number;
  system: string;
  messages: Anthropic.MessageParam[];
  tools?: Anthropic.Tool[];
  toolChoice?: Anthropic.ToolChoice;
  maxTokens: number;
  /** The model's price, pinned in the run's input; the reply's cost is computed with it. */
  price: ModelPrice;
  /** The call's total deadline and idle timeout (the loop's `models.timeouts`); default 10m and 60s. */
  timeouts?: ModelTimeouts;
}

/** The model's answer with its usage and cost. */
export interface ModelReply {
  content: ContentBlockLike[];
  text: string;
  stopReason: string | null;
  usage: Usage;
}

export interface ModelDeps {
  anthropic: Anthropic;
  /** How often a waiting model call heartbeats (ms); cancellation arrives with a heartbeat. */
  heartbeatMs?: number;
}

/**
 * Builds the function that calls the model from inside an activity. It streams the answer
 * within the call's limits (`req.timeouts`: a total deadline and an idle timeout, defaults 10m
 * and 60s, see model-stream.ts), passes the activity's cancellation to the request, marks the
 * system prompt and tools as a cacheable prefix, and sends `x-loopwright-*` headers so any
 * endpoint can tell the runs, roles and attempts apart.
 *
 * Usage is read from the stream's own events. Whenever it changes (`message_start`, then
 * `message_delta`) it is heartbeated, and every liveness heartbeat (one a second) repeats it, so
 * a worker lost after the endpoint answered leaves it in the activity's last heartbeat details.
 * Every failure (HTTP error, dropped or malformed stream, SSE `error` event, idle timeout, total
 * deadline, cancellation) carries the usage reported so far in its details (see model-errors.ts).
 */
export function createModelCaller(deps: ModelDeps): (req: ModelRequest) => Promise<ModelReply> {
  return async (req) => {
    const ctx = inActivity();
    const beat = ctx ? setInterval(() => heartbeatAlive(ctx), deps.heartbeatMs ?? 1000) : undefined;
    const usage = new StreamUsage(req.model, req.price);
    try {
      if (ctx) heartbeatAlive(ctx);
      const tools = req.tools?.map((t, i, all) =>
        i === all.length - 1 ? { ...t, cache_control: { type: 'ephemeral' as const } } : t,
      );
      const message = await streamMessage(
        deps.anthropic,
        {
          model: req.model,
          max_tokens: req.maxTokens,
          system: [{ type: 'text', text: req.system, cache_control: { type: 'ephemeral' } }],
          messages: req.messages,
          ...(tools ? { tools } : {}),
          ...(req.toolChoice ? { tool_choice: req.toolChoice } : {}),
        },
        {
          'x-loopwright-workflow-id': req.workflowId,
          'x-loopwright-role': req.role,
          'x-loopwright-attempt': String(req.attempt),
          ...(req.turn === undefined ? {} : { 'x-loopwright-turn': String(req.turn) }),
        },
        {
          limits: req.timeouts ?? modelTimeouts({}),
          signal: ctx?.cancellationSignal,
          usage,
          // Recorded with the server as soon as it is known: if the worker is then lost, the
          // workflow still finds the usage in the timeout's last heartbeat details.
          onUsage: () => ctx && recordHeartbeat(ctx, { usage: usage.current() }),
        },
      );
      return toReply(message, usage.current() ?? usageOfMessage(message, req.model, req.price));
    } catch (err) {
      throw toModelFailure(err, { role: req.role, model: req.model, usage: usage.current(), ...interruption(ctx) });
    } finally {
      if (beat) clearInterval(beat);
    }
  };
}

function inActivity(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Whether Temporal asked for the activity's cancellation, and why it was interrupted, once it was. */
function interruption(ctx: Context | undefined): { cancelRequested?: boolean; cancelReason?: string } {
  if (!ctx?.cancellationSignal.aborted) return {};
  const reason = ctx.cancellationSignal.reason as { message?: unknown } | undefined;
  return { cancelRequested: ctx.cancellationDetails?.cancelRequested, cancelReason: typeof reason?.message === 'string' ? reason.message : undefined };
}

function toReply(message: Anthropic.Message, usage: Usage): ModelReply {
  const content = message.content.map((b) => ({ ...b })) as ContentBlockLike[];
  const text = message.content
    .filter((b): b is Anthropic.TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('');
  return { content, text, stopReason: message.stop_reason, usage };
}

/**
 * The Anthropic client Loopwright uses: endpoint from the environment, retries left to Temporal,
 * and an HTTP stack without timeouts of its own (model-fetch.ts), so each call's limits are the
 * ones its loop sets (the SDK's request timeout is set per call, past the call's total deadline).
 */
export function createAnthropic(env: Record<string, string | undefined>): Anthropic {
  return new Anthropic({
    apiKey: env.ANTHROPIC_API_KEY || 'no-api-key-set',
    baseURL: env.ANTHROPIC_BASE_URL || undefined,
    maxRetries: 0,
    fetch: createModelFetch(),
  });
}
