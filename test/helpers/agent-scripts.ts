import type { ModelRule } from '../../model-server/script';

let seq = 0;

/** A worker turn that calls tools: `calls` are [name, input] pairs. */
export function turnCalls(
  turn: number,
  calls: Array<[string, Record<string, unknown>]>,
  extra: Partial<ModelRule> = {},
  attempt = 1,
): ModelRule {
  return {
    name: `a${attempt} turn ${turn} tools ${++seq}`,
    match: { role: 'worker', attempt, turn },
    reply: {
      content: calls.map(([name, input]) => ({ type: 'tool_use', id: `toolu_${name}_${turn}_${++seq}`, name, input })),
      stop_reason: 'tool_use',
      usage: { input_tokens: 200, output_tokens: 30 },
    },
    ...extra,
  } as ModelRule;
}

/** A worker turn that answers with its final text. */
export function turnAnswers(turn: number, text: string, extra: Partial<ModelRule> = {}, attempt = 1): ModelRule {
  return {
    name: `a${attempt} turn ${turn} answer ${++seq}`,
    match: { role: 'worker', attempt, turn },
    reply: { content: [{ type: 'text', text }], usage: { input_tokens: 300, output_tokens: 40 } },
    ...extra,
  } as ModelRule;
}
