import type { ScriptedMessage } from './reply';

/** One server-sent event of the Messages streaming API. */
export interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Text and tool input are streamed in pieces this long, so clients really accumulate deltas. */
const CHUNK_CHARS = 16;

function chunks(text: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += CHUNK_CHARS) parts.push(text.slice(i, i + CHUNK_CHARS));
  return parts;
}

/**
 * The events Anthropic sends for `message` when the request has `stream: true`:
 * `message_start` (empty content, `output_tokens` 1), then per block `content_block_start`,
 * `content_block_delta` (`text_delta` / `input_json_delta`) and `content_block_stop`, then
 * `message_delta` with `stop_reason` and the final usage, and `message_stop`. A client that
 * accumulates them gets back `message` exactly.
 */
export function messageStreamEvents(message: ScriptedMessage): StreamEvent[] {
  const events: StreamEvent[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } },
      },
    },
    { event: 'ping', data: { type: 'ping' } },
  ];
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push({
        event: 'content_block_start',
        data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      });
      for (const text of chunks(block.text)) {
        events.push({
          event: 'content_block_delta',
          data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text } },
        });
      }
    } else {
      const start = { type: 'tool_use', id: block.id, name: block.name, input: {} };
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: start } });
      for (const partial_json of ['', ...chunks(JSON.stringify(block.input))]) {
        events.push({
          event: 'content_block_delta',
          data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } },
        });
      }
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  });
  events.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: message.stop_reason, stop_sequence: null, stop_details: null, container: null },
        usage: { ...message.usage },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  return events;
}

/** Serialises one event in SSE wire format (`event:` line, `data:` line, blank line). */
export function formatSse(event: StreamEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
