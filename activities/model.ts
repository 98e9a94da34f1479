import { type Context } from '@temporalio/activity';
import { modelTimeouts, type ModelTimeouts } from '../common/loop-spec';
import {
  textOf,
  type ContentBlock,
  type ModelMessage,
  type StopReason,
  type TokenCounts,
  type ToolChoice,
  type ToolDefinition,
} from '../common/model-messages';
import { costOf, type ModelPrice } from '../common/pricing';
import type { Usage } from '../common/usage';
import { currentActivityContext } from './activity-context';
import { toModelFailure } from './model-errors';
import { heartbeatAlive, keepDetails, recordHeartbeat } from './model-heartbeat';
import type { ModelClient } from './model-port';

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
  messages: ModelMessage[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  maxTokens: number;
  /** The model's price, pinned in the run's input; the reply's cost is computed with it. */
  price: ModelPrice;
  /** The call's total deadline and idle timeout (the loop's `models.timeouts`); default 10m and 60s. */
  timeouts?: ModelTimeouts;
}

/** The model's answer with its usage and cost. */
export interface ModelReply {
  content: ContentBlock[];
  text: string;
  stopReason: StopReason | null;
  usage: Usage;
}

export interface ModelDeps {
  /** The model provider's adapter (activities/providers). */
  client: ModelClient;
  /** How often a waiting model call heartbeats (ms); cancellation arrives with a heartbeat. */
  heartbeatMs?: number;
}

/**
 * Builds the function that calls the model from inside an activity, through the model port: the
 * provider's adapter streams the answer within the call's limits (`req.timeouts`: a total deadline
 * and an idle timeout, defaults 10m and 60s, see model-limits.ts), caches the stable prefix (the
 * system prompt and tools) and tells the endpoint the run, role and attempt; this passes it the
 * activity's cancellation and prices what it reports at the run's pinned price.
 *
 * Usage is what the provider reported as it streamed. Whenever it changes it is heartbeated (from
 * the call's first second on: no heartbeat leaves before then), and every liveness heartbeat (one a
 * second) repeats it, so a worker lost after the endpoint answered leaves it in the activity's last
 * heartbeat details. Every failure (HTTP error, dropped or
 * malformed stream, stream error event, idle timeout, total deadline, cancellation) carries the
 * usage reported so far in its details (see model-errors.ts).
 */
export function createModelCaller(deps: ModelDeps): (req: ModelRequest) => Promise<ModelReply> {
  return async (req) => {
    const ctx = currentActivityContext();
    const every = deps.heartbeatMs ?? 1000;
    const beat = ctx ? setInterval(() => heartbeatAlive(ctx), every) : undefined;
    const started = Date.now();
    let reported: Usage | undefined;
    try {
      const answer = await deps.client.call(
        {
          model: req.model,
          system: wellFormed(req.system),
          messages: wellFormed(req.messages),
          maxTokens: req.maxTokens,
          ...(req.tools ? { tools: wellFormed(req.tools) } : {}),
          ...(req.toolChoice ? { toolChoice: req.toolChoice } : {}),
          caller: {
            workflowId: req.workflowId,
            role: req.role,
            attempt: req.attempt,
            ...(req.turn === undefined ? {} : { turn: req.turn }),
          },
        },
        {
          limits: req.timeouts ?? modelTimeouts({}),
          signal: ctx?.cancellationSignal,
          onUsage: (tokens) => {
            reported = priced(tokens, req.model, req.price);
            // Recorded with the server once the call has run a heartbeat interval (at once after
            // that, else by the first liveness heartbeat): if the worker is then lost, the
            // workflow still finds the usage in the timeout's last heartbeat details. A call
            // that ends sooner sends no heartbeat at all: each is a server write, and the SDK
            // throttles heartbeats to one an interval anyway (WORKER_TUNING), so sending the
            // first at once would not get this usage to the server any sooner.
            if (ctx && Date.now() - started >= every) recordHeartbeat(ctx, { usage: reported });
            else if (ctx) keepDetails(ctx, { usage: reported });
          },
        },
      );
      return {
        content: answer.content,
        text: textOf(answer.content),
        stopReason: answer.stopReason,
        usage: priced(answer.tokens, req.model, req.price),
      };
    } catch (err) {
      throw toModelFailure(err, { role: req.role, model: req.model, usage: reported, ...interruption(ctx) });
    } finally {
      if (beat) clearInterval(beat);
    }
  };
}

/** A UTF-16 surrogate with no partner: text that is not valid Unicode. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `value` with every lone surrogate in its strings (at any depth) replaced by U+FFFD. What the
 * agent can put in a request (a tool's output, a file it wrote, a diff the judge reads) is cut
 * by character counts in many places, and a cut between the two halves of an emoji leaves one
 * half: the Messages API refuses a request holding one (400, "no low surrogate in string"), a
 * failure no retry fixes, and since the text stays in the transcript every later call of the run
 * would be refused too. So no string leaves for the provider unless it is valid Unicode.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return value.replace(LONE_SURROGATE, '\uFFFD') as T;
  if (Array.isArray(value)) return value.map((v: unknown) => wellFormed(v)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [wellFormed(k), wellFormed(v)])) as T;
  }
  return value;
}

/** Token counts with their cost at the pinned price. */
export function priced(tokens: TokenCounts, model: string, price: ModelPrice): Usage {
  const counts = {
    inputTokens: tokens.inputTokens,
    outputTokens: tokens.outputTokens,
    cacheReadTokens: tokens.cacheReadTokens,
    cacheWriteTokens: tokens.cacheWriteTokens,
  };
  return { ...counts, costUsd: costOf(model, counts, { [model]: price }) };
}

/** Whether Temporal asked for the activity's cancellation, and why it was interrupted, once it was. */
function interruption(ctx: Context | undefined): { cancelRequested?: boolean; cancelReason?: string } {
  if (!ctx?.cancellationSignal.aborted) return {};
  const reason = ctx.cancellationSignal.reason as { message?: unknown } | undefined;
  return {
    cancelRequested: ctx.cancellationDetails?.cancelRequested,
    cancelReason: typeof reason?.message === 'string' ? reason.message : undefined,
  };
}
