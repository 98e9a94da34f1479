import type { LoopInput } from '../../common/loop-input';
import { LoopSpecSchema } from '../../common/loop-spec';

/**
 * A run's input for unit tests of workflow helpers: an evaluate-optimize spec with one judge check
 * (`has three lines`), a cli trigger and no prices; `spec` overrides fields of the spec before it
 * is parsed, `extra` fields of the input.
 */
export function unitLoopInput(spec: Record<string, unknown> = {}, extra: Partial<LoopInput> = {}): LoopInput {
  return {
    loop: 'evaluate-optimize',
    task: 'Write a haiku.',
    spec: LoopSpecSchema.parse({
      name: 'evaluate-optimize',
      version: '1',
      agent: { systemPrompt: 'work' },
      models: { worker: 'w', checker: 'c' },
      checks: [{ kind: 'judge', rubric: ['has three lines'] }],
      budget: { maxAttempts: 2 },
      escalation: {},
      autonomy: 'L2',
      ...spec,
    }),
    rubricHash: 'sha256:abc',
    rubricHashes: { judge: 'sha256:abc' },
    prices: {},
    trigger: { kind: 'cli' },
    ...extra,
  };
}
