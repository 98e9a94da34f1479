import type Anthropic from '@anthropic-ai/sdk';
import { costOf, type ModelPrice } from '../common/pricing';
import type { Usage } from '../common/usage';

/** Token counts as the Messages API reports them. */
type Tokens = Omit<Usage, 'costUsd'>;

/**
 * The usage a model's stream has reported so far, read from its events: `message_start` gives
 * the input (and cache) tokens and a first output count; every `message_delta` carries
 * cumulative counts that replace the earlier ones (fields it omits keep their values). What it
 * holds is what the endpoint said it used, so it is what a broken call is charged.
 */
export class StreamUsage {
  private tokens: Tokens | undefined;

  constructor(
    private readonly model: string,
    private readonly price: ModelPrice,
  ) {}

  /** Takes in one stream event; true when the usage changed. */
  observe(event: Anthropic.MessageStreamEvent): boolean {
    const before = JSON.stringify(this.tokens);
    if (event.type === 'message_start') {
      const u = event.message.usage;
      this.tokens = { inputTokens: u.input_tokens ?? 0, outputTokens: u.output_tokens ?? 0, cacheReadTokens: u.cache_read_input_tokens ?? 0, cacheWriteTokens: u.cache_creation_input_tokens ?? 0 };
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

  /** The usage reported so far with its cost at the pinned price, or undefined before any was reported. */
  current(): Usage | undefined {
    return this.tokens ? priced(this.tokens, this.model, this.price) : undefined;
  }
}

/** The usage of a complete message with its cost at the pinned price. */
export function usageOfMessage(message: Anthropic.Message, model: string, price: ModelPrice): Usage {
  const u = message.usage;
  return priced({ inputTokens: u.input_tokens ?? 0, outputTokens: u.output_tokens ?? 0, cacheReadTokens: u.cache_read_input_tokens ?? 0, cacheWriteTokens: u.cache_creation_input_tokens ?? 0 }, model, price);
}

function priced(tokens: Tokens, model: string, price: ModelPrice): Usage {
  return { ...tokens, costUsd: costOf(model, tokens, { [model]: price }) };
}
