import type { ModelTimeouts } from '../common/loop-spec';
import type {
  ContentBlock,
  ModelMessage,
  StopReason,
  TokenCounts,
  ToolChoice,
  ToolDefinition,
} from '../common/model-messages';

/**
 * The model port: what Loopwright's activities need from a model provider, in Loopwright's own
 * types (common/model-messages.ts). A provider is one adapter that implements
 * {@link ModelClient} (activities/providers/anthropic is the first); everything above it (the
 * model caller in model.ts, the agent turn, the judge, the proposer) depends only on this file.
 *
 * What stays above the port, the same for every provider: heartbeats, cancellation, pricing at
 * the run's pinned price, charging the usage of broken calls, and the classification of
 * failures into what Temporal retries (model-errors.ts).
 */
export interface ModelClient {
  /** The provider's name, for messages and docs (`anthropic`). */
  readonly provider: string;
  /**
   * Streams one call within `control.limits` and resolves with the complete answer. Reports token
   * counts through `control.onUsage` as soon as the provider reports them (and every time they
   * change), so a call that breaks later is still charged. Rejects only with a
   * {@link ModelCallError} (the fault in Loopwright's terms and what is known of the stream).
   */
  call(call: ModelCall, control: ModelCallControl): Promise<ModelAnswer>;
}

/** Who makes a call: the endpoint is told, so it can tell runs, roles and attempts apart. */
export interface ModelCaller {
  workflowId: string;
  role: string;
  attempt: number;
  /** The agent turn within the attempt (multi-turn sessions). */
  turn?: number;
}

/** One call as an adapter receives it. The system prompt and the tools are a stable prefix: an adapter caches them when its provider can. */
export interface ModelCall {
  model: string;
  system: string;
  messages: ModelMessage[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  maxTokens: number;
  caller: ModelCaller;
}

/** The call's limits, the activity's cancellation, and where the usage goes as it is reported. */
export interface ModelCallControl {
  limits: ModelTimeouts;
  signal?: AbortSignal;
  onUsage?: (tokens: TokenCounts) => void;
}

/** A complete answer: its content blocks, why it stopped, and the tokens the provider reported. */
export interface ModelAnswer {
  content: ContentBlock[];
  stopReason: StopReason;
  tokens: TokenCounts;
}

/** Why a model call was cut short by the caller's side: a limit ran out, or it was cancelled. */
export type StreamCut = 'idle' | 'total' | 'cancelled';

/** What is known about a model call that did not end in a complete answer. */
export interface StreamFacts {
  /** Set when this side cut the call. */
  cut?: StreamCut;
  /** True when the response ended properly but without a stop reason: the answer is incomplete. */
  incomplete?: boolean;
  /** Whether the response's headers arrived. */
  connected: boolean;
  /** Stream events received (keep-alives not counted). */
  events: number;
  elapsedMs: number;
  limits: ModelTimeouts;
}

/**
 * What went wrong, in Loopwright's terms; model-errors.ts decides what Temporal does with it.
 * - `http`: the endpoint answered with an error status (`credentials` names what to check on 401/403);
 * - `unreachable`: no connection (refused, reset before the headers, DNS);
 * - `stream-error`: the stream was answered, then reported an error of `errorType`; the adapter
 *   knows its provider's error types and says whether retrying can help;
 * - `not-json`: an event that could not be parsed;
 * - `broken`: anything else (a dropped connection mid-stream, say).
 */
export type ModelFault =
  | { kind: 'http'; status: number; message: string; retryAfterMs?: number; credentials?: string }
  | { kind: 'unreachable'; message: string }
  | { kind: 'stream-error'; errorType: string; message: string; retryable: boolean }
  | { kind: 'not-json'; message: string }
  | { kind: 'broken'; message: string };

/** A model call that failed: the fault, and what is known of its stream (when it got that far). */
export class ModelCallError extends Error {
  constructor(
    readonly fault: ModelFault,
    readonly facts?: StreamFacts,
    options?: { cause?: unknown },
  ) {
    super(
      facts?.cut
        ? `model call cut: ${facts.cut}`
        : facts?.incomplete
          ? 'the stream ended without a stop reason'
          : fault.message,
      options,
    );
    this.name = 'ModelCallError';
  }
}
