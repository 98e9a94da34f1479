import { parseModelScript, type ModelRule, type ModelScript } from '../../model-server/script';

/** A worker answer with plain text. */
export function workerSays(attempt: number, text: string, extra: Partial<ModelRule> = {}): ModelRule {
  return {
    name: `worker ${attempt}`,
    match: { role: 'worker', attempt },
    times: 1,
    reply: { content: [{ type: 'text', text }], usage: { input_tokens: 100, output_tokens: 20 } },
    ...extra,
  } as ModelRule;
}

/** A judge verdict through submit_verdict. */
export function judgeSays(
  attempt: number,
  passed: boolean,
  failed: string[] = [],
  correction = '',
  extra: Partial<ModelRule> = {},
): ModelRule {
  return {
    name: `judge ${attempt} ${passed ? 'pass' : 'fail'}`,
    match: { role: 'checker', attempt },
    times: 1,
    reply: {
      content: [
        {
          type: 'tool_use',
          name: 'submit_verdict',
          input: {
            passed,
            reason: passed ? 'meets the rubric' : `fails: ${failed.join(', ')}`,
            failed_items: failed,
            required_correction: correction,
          },
        },
      ],
      usage: { input_tokens: 50, output_tokens: 10 },
    },
    ...extra,
  } as ModelRule;
}

export function script(...rules: ModelRule[]): ModelScript {
  return parseModelScript({ rules }, 'test script');
}
