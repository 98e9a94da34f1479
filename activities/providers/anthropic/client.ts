import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, ModelMessage, ToolChoice, ToolDefinition } from '../../../common/model-messages';
import { createModelFetch } from '../../model-fetch';
import type { ModelCall, ModelCaller, ModelClient } from '../../model-port';
import { anthropicCallError } from './faults';
import { streamMessage } from './stream';
import { tokensOf } from './usage';

/**
 * The Anthropic client Loopwright uses: endpoint from the environment (`ANTHROPIC_API_KEY`,
 * `ANTHROPIC_BASE_URL`, so any Anthropic-compatible server works), retries left to Temporal, and
 * an HTTP stack without timeouts of its own (model-fetch.ts), so each call's limits are the ones
 * its loop sets (the SDK's request timeout is set per call, past the call's total deadline).
 */
export function createAnthropic(env: Record<string, string | undefined>): Anthropic {
  return new Anthropic({
    apiKey: env.ANTHROPIC_API_KEY || 'no-api-key-set',
    baseURL: env.ANTHROPIC_BASE_URL || undefined,
    maxRetries: 0,
    fetch: createModelFetch(),
  });
}

/**
 * The model port ({@link ModelClient}) over the Anthropic Messages API. Each call is streamed
 * (stream.ts) with the system prompt and the last tool marked as a cacheable prefix (prompt
 * caching), and `x-loopwright-*` headers so any endpoint can tell the runs, roles and attempts
 * apart. Loopwright's messages, tools and tool choice are mapped to the SDK's shapes here, and the
 * answer's blocks back; SDK errors become the port's faults (faults.ts).
 */
export function createAnthropicModelClient(anthropic: Anthropic): ModelClient {
  return {
    provider: 'anthropic',
    async call(call, control) {
      try {
        const { message, tokens } = await streamMessage(anthropic, requestOf(call), headersOf(call.caller), control);
        return {
          content: message.content.flatMap(blockOf),
          stopReason: message.stop_reason!,
          tokens: tokens ?? tokensOf(message.usage),
        };
      } catch (err) {
        throw anthropicCallError(err);
      }
    },
  };
}

/** The Messages API request of a call: the system prompt and the last tool carry `cache_control`. */
export function requestOf(call: ModelCall): Anthropic.MessageStreamParams {
  const tools = call.tools?.map((t, i, all) =>
    i === all.length - 1 ? { ...toolOf(t), cache_control: { type: 'ephemeral' as const } } : toolOf(t),
  );
  return {
    model: call.model,
    max_tokens: call.maxTokens,
    system: [{ type: 'text', text: call.system, cache_control: { type: 'ephemeral' } }],
    messages: call.messages.map(messageOf),
    ...(tools ? { tools } : {}),
    ...(call.toolChoice ? { tool_choice: toolChoiceOf(call.toolChoice) } : {}),
  };
}

function headersOf(caller: ModelCaller): Record<string, string> {
  return {
    'x-loopwright-workflow-id': caller.workflowId,
    'x-loopwright-role': caller.role,
    'x-loopwright-attempt': String(caller.attempt),
    ...(caller.turn === undefined ? {} : { 'x-loopwright-turn': String(caller.turn) }),
  };
}

/** A tool definition as the Messages API takes it. */
export function toolOf(def: ToolDefinition): Anthropic.Tool {
  return { name: def.name, description: def.description, input_schema: def.inputSchema };
}

function toolChoiceOf(choice: ToolChoice): Anthropic.ToolChoice {
  return choice.type === 'tool' ? { type: 'tool', name: choice.name } : { type: choice.type };
}

function messageOf(m: ModelMessage): Anthropic.MessageParam {
  if (typeof m.content === 'string') return { role: m.role, content: m.content };
  return {
    role: m.role,
    content: m.content.map((b): Anthropic.ContentBlockParam => {
      switch (b.type) {
        case 'text':
          return { type: 'text', text: b.text };
        case 'tool_use':
          return { type: 'tool_use', id: b.id, name: b.name, input: b.input };
        case 'tool_result':
          return {
            type: 'tool_result',
            tool_use_id: b.tool_use_id,
            content: b.content,
            ...(b.is_error ? { is_error: true } : {}),
          };
      }
    }),
  };
}

/** An answer's block in Loopwright's terms; blocks Loopwright does not use (thinking, server tools) are left out. */
function blockOf(b: Anthropic.ContentBlock): ContentBlock[] {
  if (b.type === 'text') return [{ type: 'text', text: b.text }];
  if (b.type === 'tool_use') return [{ type: 'tool_use', id: b.id, name: b.name, input: b.input }];
  return [];
}
