import Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import type { ContentBlockLike } from '../common/judge';
import { costOf, type ModelPrice } from '../common/pricing';
import type { Usage } from '../common/usage';
import { toModelFailure } from './model-errors';

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
 * (long outputs do not hit HTTP timeouts), heartbeats while it waits, passes the activity's
 * cancellation to the request, marks the system prompt and tools as a cacheable prefix, and
 * sends `x-loopwright-*` headers so any endpoint can tell the runs, roles and attempts apart.
 * When the provider answered but the call still failed (an error in the middle of the stream),
 * the usage it had reported rides in the failure's details, so the run is charged for it.
 */
export function createModelCaller(deps: ModelDeps): (req: ModelRequest) => Promise<ModelReply> {
  return async (req) => {
    const ctx = inActivity();
    const beat = ctx ? setInterval(() => ctx.heartbeat(), deps.heartbeatMs ?? 1000) : undefined;
    let stream: ReturnType<Anthropic['messages']['stream']> | undefined;
    try {
      ctx?.heartbeat();
      const tools = req.tools?.map((t, i, all) =>
        i === all.length - 1 ? { ...t, cache_control: { type: 'ephemeral' as const } } : t,
      );
      stream = deps.anthropic.messages.stream(
        {
          model: req.model,
          max_tokens: req.maxTokens,
          system: [{ type: 'text', text: req.system, cache_control: { type: 'ephemeral' } }],
          messages: req.messages,
          ...(tools ? { tools } : {}),
          ...(req.toolChoice ? { tool_choice: req.toolChoice } : {}),
        },
        {
          headers: {
            'x-loopwright-workflow-id': req.workflowId,
            'x-loopwright-role': req.role,
            'x-loopwright-attempt': String(req.attempt),
            ...(req.turn === undefined ? {} : { 'x-loopwright-turn': String(req.turn) }),
          },
          signal: ctx?.cancellationSignal,
        },
      );
      const message = await stream.finalMessage();
      const reply = toReply(message, req.model, req.price);
      // Recorded with the server at once: if this activity then times out before its result
      // arrives, the workflow still finds the usage in the timeout's last heartbeat details.
      ctx?.heartbeat({ usage: reply.usage });
      return reply;
    } catch (err) {
      const partial = stream?.currentMessage;
      throw toModelFailure(err, { role: req.role, model: req.model, usage: partial ? usageOf(partial, req.model, req.price) : undefined });
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

function usageOf(message: Anthropic.Message, model: string, price: ModelPrice): Usage {
  const tokens = {
    inputTokens: message.usage.input_tokens ?? 0,
    outputTokens: message.usage.output_tokens ?? 0,
    cacheReadTokens: message.usage.cache_read_input_tokens ?? 0,
    cacheWriteTokens: message.usage.cache_creation_input_tokens ?? 0,
  };
  return { ...tokens, costUsd: costOf(model, tokens, { [model]: price }) };
}

function toReply(message: Anthropic.Message, model: string, price: ModelPrice): ModelReply {
  const content = message.content.map((b) => ({ ...b })) as ContentBlockLike[];
  const text = message.content
    .filter((b): b is Anthropic.TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('');
  return { content, text, stopReason: message.stop_reason, usage: usageOf(message, model, price) };
}

/** The Anthropic client Loopwright uses: endpoint from the environment, retries left to Temporal. */
export function createAnthropic(env: Record<string, string | undefined>): Anthropic {
  return new Anthropic({
    apiKey: env.ANTHROPIC_API_KEY || 'no-api-key-set',
    baseURL: env.ANTHROPIC_BASE_URL || undefined,
    maxRetries: 0,
    timeout: 10 * 60 * 1000,
  });
}
