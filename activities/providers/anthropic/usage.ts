import type Anthropic from '@anthropic-ai/sdk';
import type { TokenCounts } from '../../../common/model-messages';

/**
 * The tokens a Messages API stream has reported so far, read from its events: `message_start`
 * gives the input (and cache) tokens and a first output count; every `message_delta` carries
 * cumulative counts that replace the earlier ones (fields it omits keep their values). What it
 * holds is what the endpoint said it used, so it is what a broken call is charged.
 */
export class StreamUsage {
  private tokens: TokenCounts | undefined;

  /** Takes in one stream event; true when the counts changed. */
  observe(event: Anthropic.MessageStreamEvent): boolean {
    const before = JSON.stringify(this.tokens);
    if (event.type === 'message_start') {
      this.tokens = tokensOf(event.message.usage);
    } else if (event.type === 'message_delta') {
      const u = event.usage;
      const t = this.tokens ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      this.tokens = {
        inputTokens: u.input_tokens ?? t.inputTokens,
        outputTokens: u.output_tokens ?? t.outputTokens,
        cacheReadTokens: u.cache_read_input_tokens ?? t.cacheReadTokens,
        cacheWriteTokens: u.cache_creation_input_tokens ?? t.cacheWriteTokens,
      };
    }
    return JSON.stringify(this.tokens) !== before;
  }

  /** The counts reported so far, or undefined before any were. */
  current(): TokenCounts | undefined {
    return this.tokens && { ...this.tokens };
  }
}

/** The token counts of a message's usage (absent counts are 0). */
export function tokensOf(u: Anthropic.Usage): TokenCounts {
  return {
    inputTokens: u.input_tokens ?? 0,
    outputTokens: u.output_tokens ?? 0,
    cacheReadTokens: u.cache_read_input_tokens ?? 0,
    cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
  };
}
