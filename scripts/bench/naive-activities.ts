import { createModelCaller } from '../../activities/model';
import type { ModelClient } from '../../activities/model-port';
import { createToolRegistry, executeTool } from '../../activities/tools/registry';
import type { TranscriptMessage } from '../../common/context';

/** Input of {@link NaiveActivities.naiveTurn}: the whole conversation, every turn. */
export interface NaiveTurnInput {
  workflowId: string;
  turn: number;
  model: string;
  systemPrompt: string;
  toolNames: string[];
  messages: TranscriptMessage[];
}

/** Input of {@link NaiveActivities.naiveTool}: the call as the model made it. */
export interface NaiveToolInput {
  root: string;
  name: string;
  input: unknown;
}

const FREE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/**
 * The activities of the naive baseline: the conversation travels through history. Both call
 * the same code Loopwright's activities do (the model caller with the real SDK, the tool
 * registry), so the two runs differ only in what crosses the activity boundary.
 */
export function createNaiveActivities(deps: { model: ModelClient }) {
  const callModel = createModelCaller({ client: deps.model });
  const registry = createToolRegistry();
  return {
    /** One model turn with the whole conversation as input; returns the assistant message. */
    async naiveTurn(input: NaiveTurnInput): Promise<TranscriptMessage> {
      const reply = await callModel({
        role: 'worker',
        model: input.model,
        price: FREE,
        workflowId: input.workflowId,
        attempt: 1,
        turn: input.turn,
        system: input.systemPrompt,
        messages: input.messages,
        tools: registry.definitions(input.toolNames),
        maxTokens: 4096,
      });
      return { role: 'assistant', content: reply.content };
    },

    /** Runs one tool call in `root` and returns its full output (read_file: the whole file). */
    async naiveTool(input: NaiveToolInput): Promise<{ content: string; isError: boolean }> {
      return executeTool(registry, input.name, input.input, {
        root: input.root,
        allowedCommands: [],
        commandTimeoutMs: 60_000,
        outputCapChars: 100_000,
      });
    },
  };
}

/** The naive baseline's activities, for `proxyActivities`. */
export type NaiveActivities = ReturnType<typeof createNaiveActivities>;
