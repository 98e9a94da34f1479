/**
 * The conversation an agent keeps with the model, and the pure helpers that keep it small
 * enough to send: cap one tool output, elide old tool results. Shared by workflow code and
 * activities, so it stays pure (no Node built-ins, no clock, no randomness).
 */

import type { ContentBlock, ModelMessage } from './model-messages';

export type { ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock } from './model-messages';

/** One message of a transcript (Loopwright's own message type, see model-messages.ts). */
export type TranscriptMessage = ModelMessage;

/** Characters one block counts for: its text, its tool result, or its tool name plus JSON input. */
export function blockChars(block: ContentBlock): number {
  switch (block.type) {
    case 'text':
      return block.text.length;
    case 'tool_result':
      return block.content.length;
    case 'tool_use':
      return block.name.length + (JSON.stringify(block.input) ?? '').length;
  }
}

/** Total characters of all message content (see {@link blockChars}); a cheap proxy for tokens. */
export function transcriptChars(messages: readonly TranscriptMessage[]): number {
  let total = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') total += m.content.length;
    else for (const b of m.content) total += blockChars(b);
  }
  return total;
}

/**
 * A tool output cut to fit the context. Text of at most `capChars` characters comes back
 * unchanged; longer text keeps its head (about 2/3 of the cap) and its tail (the rest), with a
 * marker between them that says how much was cut and names `ref`, where the full output is
 * stored. The result is at most `capChars` plus the marker's length. A cut never splits a
 * surrogate pair.
 */
export function capToolOutput(text: string, ref: string, capChars: number): string {
  if (text.length <= capChars) return text;
  const cap = Number.isFinite(capChars) ? Math.max(0, Math.floor(capChars)) : 0;
  let head = Math.floor((cap * 2) / 3);
  let tail = cap - head;
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head -= 1;
  if (tail > 0 && isLowSurrogate(text.charCodeAt(text.length - tail))) tail -= 1;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n[… ${cut} characters cut; full output stored as ${ref}]\n${text.slice(text.length - tail)}`;
}

/** What {@link elideOldToolResults} returns: the messages to send and how many results it elided. */
export interface ElisionResult {
  messages: TranscriptMessage[];
  elided: number;
}

/** The text that replaces an elided tool result of `chars` characters. */
export function elisionMarker(chars: number): string {
  return `[elided: ${chars} characters of an earlier tool result]`;
}

const ELIDED = /^\[elided: \d+ characters of an earlier tool result\]$/;

/**
 * Keeps a transcript under `maxChars` (as {@link transcriptChars} counts) by replacing the
 * content of tool results with a short marker, oldest first, until the total fits or nothing
 * more can be elided. Tool results from the last `keepLastTurns` user messages on are never
 * touched (with fewer user messages than that, none are), nor are results the marker would
 * not shorten or that are already elided, so eliding twice changes nothing more. Returns a
 * new array and never mutates its input; unchanged messages are shared.
 */
export function elideOldToolResults(
  messages: readonly TranscriptMessage[],
  maxChars: number,
  keepLastTurns = 2,
): ElisionResult {
  const out = messages.slice();
  let total = transcriptChars(messages);
  let elided = 0;
  if (total <= maxChars) return { messages: out, elided };
  const protectedFrom = firstProtectedIndex(messages, keepLastTurns);
  for (const [i, message] of messages.slice(0, protectedFrom).entries()) {
    if (total <= maxChars) break;
    const content = message.content;
    if (typeof content === 'string') continue;
    let blocks: ContentBlock[] | undefined;
    for (const [j, block] of content.entries()) {
      if (total <= maxChars) break;
      if (block.type !== 'tool_result') continue;
      const marker = elisionMarker(block.content.length);
      if (marker.length >= block.content.length || ELIDED.test(block.content)) continue;
      blocks ??= content.slice();
      blocks[j] = { ...block, content: marker };
      total -= block.content.length - marker.length;
      elided += 1;
    }
    if (blocks) out[i] = { ...message, content: blocks };
  }
  return { messages: out, elided };
}

/** Index of the first message of the last `keepLastTurns` turns (a turn starts at a user message). */
function firstProtectedIndex(messages: readonly TranscriptMessage[], keepLastTurns: number): number {
  if (keepLastTurns <= 0) return messages.length;
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user' && ++seen === keepLastTurns) return i;
  }
  return 0;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
