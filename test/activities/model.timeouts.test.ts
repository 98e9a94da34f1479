import { ModelsSchema, modelTimeouts } from '../../common/loop-spec';
import { modelTimeoutsArg } from '../../common/loop-rules';
import { priced } from '../../activities/model';
import { StreamUsage } from '../../activities/providers/anthropic/usage';

describe('models.timeouts', () => {
  test('a loop without them (and a run started before they existed) gets 10 minutes in total and 60 s idle', () => {
    expect(modelTimeouts({})).toEqual({ totalMs: 600_000, idleMs: 60_000 });
    expect(modelTimeouts(ModelsSchema.parse({ worker: 'w', checker: 'c' }))).toEqual({
      totalMs: 600_000,
      idleMs: 60_000,
    });
  });

  test("a model call's activity input carries them only when the loop sets them: the activity applies the same defaults", () => {
    expect(modelTimeoutsArg(ModelsSchema.parse({ worker: 'w', checker: 'c' }))).toEqual({});
    expect(modelTimeoutsArg(ModelsSchema.parse({ worker: 'w', checker: 'c', timeouts: { idle: '90s' } }))).toEqual({
      timeouts: { totalMs: 600_000, idleMs: 90_000 },
    });
  });

  test('durations are read as given, and what is left out keeps its default', () => {
    expect(
      modelTimeouts(ModelsSchema.parse({ worker: 'w', checker: 'c', timeouts: { total: '3m', idle: '2s' } })),
    ).toEqual({ totalMs: 180_000, idleMs: 2_000 });
    expect(modelTimeouts(ModelsSchema.parse({ worker: 'w', checker: 'c', timeouts: { idle: '90s' } }))).toEqual({
      totalMs: 600_000,
      idleMs: 90_000,
    });
  });

  test.each([
    [{ idle: '500ms' }, 'timeouts.idle: idle must be at least 1s'],
    [{ total: '30s', idle: '1m' }, 'timeouts.total: total must be at least idle'],
    [{ total: 'soon' }, 'timeouts.total: expected a duration'],
    [{ totalMs: 5000 }, 'timeouts'],
  ])('%j is refused', (timeouts, problem) => {
    const parsed = ModelsSchema.safeParse({ worker: 'w', checker: 'c', timeouts });
    expect(parsed.success).toBe(false);
    const issues = parsed.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    expect(issues).toContain(problem);
  });
});

describe('StreamUsage', () => {
  const start = {
    type: 'message_start',
    message: {
      usage: { input_tokens: 1000, output_tokens: 1, cache_read_input_tokens: 200, cache_creation_input_tokens: 50 },
    },
  } as never;
  const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

  test('message_start reports the input; each message_delta replaces the counts it carries and keeps the others', () => {
    const u = new StreamUsage();
    expect(u.current()).toBeUndefined();
    expect(u.observe(start)).toBe(true);
    expect(u.current()).toMatchObject({
      inputTokens: 1000,
      outputTokens: 1,
      cacheReadTokens: 200,
      cacheWriteTokens: 50,
    });
    expect(u.observe({ type: 'content_block_delta' } as never)).toBe(false);
    expect(
      u.observe({
        type: 'message_delta',
        usage: {
          output_tokens: 40,
          input_tokens: null,
          cache_read_input_tokens: null,
          cache_creation_input_tokens: null,
        },
      } as never),
    ).toBe(true);
    expect(u.current()).toMatchObject({
      inputTokens: 1000,
      outputTokens: 40,
      cacheReadTokens: 200,
      cacheWriteTokens: 50,
    });
    expect(priced(u.current()!, 'm', price).costUsd).toBeCloseTo((1000 * 3 + 40 * 15 + 200 * 0.3 + 50 * 3.75) / 1e6, 5);
    expect(u.observe({ type: 'message_delta', usage: { output_tokens: 40, input_tokens: 1000 } } as never)).toBe(false);
  });
});
