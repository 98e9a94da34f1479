import { randomBytes } from 'node:crypto';
import type { ScriptReply } from './script';

/** A content block of a scripted assistant message, as the Messages API returns it. */
export type ScriptedContentBlock =
  { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

/** Usage of a scripted message, every counter filled in. */
export interface ScriptedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A full Messages API `Message` object built from a scripted reply. */
export interface ScriptedMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ScriptedContentBlock[];
  stop_reason: string;
  stop_sequence: null;
  stop_details: null;
  container: null;
  usage: ScriptedUsage;
}

/** A random id with the given prefix, shaped like Anthropic's (`msg_...`, `toolu_...`, `req_...`). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** The rough token count the scripted model charges: one token per four characters. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/**
 * Builds the message answering a request. `requestChars` is the length of the raw request
 * body, used to estimate `input_tokens` when the script does not give it.
 */
export function buildMessage(reply: ScriptReply, model: string, requestChars: number): ScriptedMessage {
  const content: ScriptedContentBlock[] = reply.content.map((block) =>
    block.type === 'text'
      ? { type: 'text', text: block.text }
      : { type: 'tool_use', id: block.id ?? newId('toolu'), name: block.name, input: block.input },
  );
  const outputChars = content.reduce(
    (sum, block) =>
      sum + (block.type === 'text' ? block.text.length : block.name.length + JSON.stringify(block.input).length),
    0,
  );
  const usage = reply.usage ?? {};
  return {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.stop_reason ?? (content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    stop_details: null,
    container: null,
    usage: {
      input_tokens: usage.input_tokens ?? estimateTokens(requestChars),
      output_tokens: usage.output_tokens ?? estimateTokens(outputChars),
      cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    },
  };
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The Anthropic error type that fits an HTTP status (`invalid_request_error` / `api_error` by default). */
export function errorTypeFor(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** Anthropic's error body: `{ type: "error", error: { type, message }, request_id }`. */
export function errorBody(
  status: number,
  message: string,
  requestId: string,
): { type: 'error'; error: { type: string; message: string }; request_id: string } {
  return { type: 'error', error: { type: errorTypeFor(status), message }, request_id: requestId };
}
