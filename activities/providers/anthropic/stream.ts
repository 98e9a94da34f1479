import Anthropic from '@anthropic-ai/sdk';
import type { TokenCounts } from '../../../common/model-messages';
import { withCallLimits } from '../../model-limits';
import type { ModelCallControl, ModelCallError } from '../../model-port';
import { anthropicCallError } from './faults';
import { StreamUsage } from './usage';

/**
 * Streams one Messages API call within the call's own limits (model-limits.ts: a total deadline
 * and an idle timeout; the SDK's request timeout is set past the total deadline, so it never cuts
 * first). Every event's usage is read ({@link StreamUsage}) and reported through
 * `control.onUsage` each time it changes (message_start, then message_delta). Resolves with the
 * complete message and the tokens the stream reported; a call that breaks, is cut or ends
 * without a `stop_reason` rejects with a {@link ModelCallError} whose cause is the SDK's error.
 */
export async function streamMessage(
  anthropic: Anthropic,
  body: Anthropic.MessageStreamParams,
  headers: Record<string, string>,
  control: ModelCallControl,
): Promise<{ message: Anthropic.Message; tokens: TokenCounts | undefined }> {
  const { limits } = control;
  const usage = new StreamUsage();
  return withCallLimits(limits, control.signal, async (watch) => {
    const stream = anthropic.messages.stream(body, { headers, signal: watch.signal, timeout: limits.totalMs + 60_000 });
    stream.on('connect', () => watch.connected());
    let stopped = false;
    stream.on('streamEvent', (event) => {
      watch.event();
      if (event.type === 'message_stop') stopped = true;
      if (usage.observe(event)) control.onUsage?.(usage.current()!);
    });
    let message: Anthropic.Message;
    try {
      message = await stream.finalMessage();
    } catch (err) {
      // The SDK's own complaint about a response that ended early has no cause; a broken transport's has one.
      const early =
        err instanceof Anthropic.AnthropicError && !(err instanceof Anthropic.APIError) && err.cause === undefined;
      throw anthropicCallError(err, watch.facts({ incomplete: early && !stopped && !watch.cut() }));
    }
    if (message.stop_reason === null || watch.cut()) {
      throw anthropicCallError(new Error('the stream ended without a stop_reason'), watch.facts({ incomplete: true }));
    }
    return { message, tokens: usage.current() };
  });
}
