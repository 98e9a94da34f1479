import type { ToolCallRef, ToolResultRef, TurnResult } from '../../common/agent';
import {
  elideOldToolResults,
  transcriptChars,
  type ContentBlock,
  type ToolUseBlock,
  type TranscriptMessage,
} from '../../common/context';
import type { ModelTimeouts } from '../../common/loop-spec';
import type { ToolDefinition } from '../../common/model-messages';
import type { ModelPrice } from '../../common/pricing';
import type { ModelReply, ModelRequest } from '../model';
import { appendMessage, loadText, loadTranscript } from '../transcript/transcript';
import type { BlobStore } from '../transcript/store';

export interface ModelTurnInput {
  workflowId: string;
  attempt: number;
  turn: number;
  model: string;
  price: ModelPrice;
  systemPrompt: string;
  /** The tools offered to the model (already filtered by the autonomy gate). */
  toolNames: string[];
  maxTokens: number;
  contextBudgetChars: number;
  /** The transcript so far (null on the first turn). */
  head: string | null;
  /** The first turn's user message (the task and the feedback of earlier attempts). */
  userText?: string;
  /** The previous turn's tool results, appended as one user message. */
  toolResults?: ToolResultRef[];
  /** Descriptions replacing the built-in ones (the loop's harness). */
  toolDescriptions?: Record<string, string>;
  /** The model call's total deadline and idle timeout (the loop's `models.timeouts`). */
  timeouts?: ModelTimeouts;
}

/** Short, single-line summary of a tool call for the Web UI and the trace. */
export function summarizeCall(input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const main = [i.path, i.command, i.pattern].find((v) => typeof v === 'string') as string | undefined;
  return (main ?? '').replace(/\s+/g, ' ').slice(0, 80);
}

/**
 * One model turn of an agent session. The conversation lives in the transcript store: this
 * appends the new user message (task or tool results) to `head`, loads the transcript, elides
 * the oldest tool results when it is over the context budget, calls the model with the offered
 * tools, appends the answer, and returns only the new head, the tool calls' names and
 * summaries, and the final text. History carries references, not the conversation.
 */
export async function modelTurn(
  deps: {
    store: BlobStore;
    callModel: (req: ModelRequest) => Promise<ModelReply>;
    definitions: (names: string[]) => ToolDefinition[];
  },
  input: ModelTurnInput,
): Promise<TurnResult> {
  const { store } = deps;
  let head = input.head;
  if (input.userText !== undefined) head = await appendMessage(store, head, { role: 'user', content: input.userText });
  if (input.toolResults?.length) {
    const blocks: ContentBlock[] = [];
    for (const r of input.toolResults) {
      const content = r.ref ? await loadText(store, r.ref) : (r.text ?? '');
      blocks.push({ type: 'tool_result', tool_use_id: r.toolUseId, content, ...(r.isError ? { is_error: true } : {}) });
    }
    head = await appendMessage(store, head, { role: 'user', content: blocks });
  }
  const transcript = await loadTranscript(store, head);
  const { messages, elided } = elideOldToolResults(transcript, input.contextBudgetChars);
  const reply = await deps.callModel({
    role: 'worker',
    model: input.model,
    price: input.price,
    workflowId: input.workflowId,
    attempt: input.attempt,
    turn: input.turn,
    system: input.systemPrompt,
    messages,
    tools: input.toolNames.length
      ? deps
          .definitions(input.toolNames)
          .map((d) => ({ ...d, description: input.toolDescriptions?.[d.name] ?? d.description }))
      : undefined,
    maxTokens: input.maxTokens,
    timeouts: input.timeouts,
  });
  const assistant: TranscriptMessage = { role: 'assistant', content: reply.content };
  const newHead = await appendMessage(store, head, assistant);
  const toolCalls: ToolCallRef[] = reply.content
    .filter((b): b is ToolUseBlock => b.type === 'tool_use')
    .map((b) => ({ id: b.id, name: b.name, summary: summarizeCall(b.input) }));
  return {
    head: newHead,
    toolCalls,
    stopReason: reply.stopReason,
    text: toolCalls.length ? reply.text.slice(0, 300) : reply.text,
    contextChars: input.systemPrompt.length + transcriptChars(messages),
    elided,
    usage: reply.usage,
  };
}
