/**
 * Loopwright's own vocabulary for talking to a model: messages, content blocks, tool
 * definitions, the tool choice and token counts. Everything above the model port
 * (activities/model-port.ts) speaks only these; a provider's adapter (activities/providers/)
 * maps them to and from its wire types. Pure: shared by workflow code and activities.
 *
 * The blocks keep the field names transcripts have always been stored with (`tool_use_id`,
 * `is_error`): transcripts are content-addressed and outlive deploys, so their shape is
 * Loopwright's, whatever a provider calls the same things.
 */

/** Plain text from the user or the model. */
export interface TextBlock {
  type: 'text';
  text: string;
}

/** The model asks for a tool to run; `id` pairs it with its result. */
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** What a tool returned, sent back in the next user message. */
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** A content block of a message. */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock;

/** One message of a conversation: a plain string or a list of content blocks. */
export interface ModelMessage {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

/** A JSON Schema of an object: what a tool takes as input. */
export interface ObjectSchema {
  type: 'object';
  properties?: unknown;
  required?: string[];
  [key: string]: unknown;
}

/** A tool the model may call: its name, what it does, and the JSON Schema of its input. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: ObjectSchema;
}

/** Which tool the model must use: any it likes (`auto`), some tool (`any`), or the named one. */
export type ToolChoice = { type: 'auto' } | { type: 'any' } | { type: 'tool'; name: string };

/**
 * Why the model stopped. Loopwright's names (an adapter maps its provider's onto them):
 * `end_turn` (it finished), `tool_use` (it waits for tool results), `max_tokens` (cut at the
 * limit), `stop_sequence`, `refusal`, `pause_turn`; a provider's other reasons pass as they are.
 */
export type StopReason =
  'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'pause_turn' | (string & {});

/** Tokens a model call used, as the provider reported them (the cost is added at the pinned price). */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** The text of an answer: its text blocks, joined. */
export function textOf(content: readonly ContentBlock[]): string {
  return content
    .filter((b): b is TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('');
}
