import { z } from 'zod';
import { zodIssues } from './format';
import type { ContentBlock, ToolDefinition, ToolUseBlock } from './model-messages';

// The judge's prompt (escaping, boundaries, rendering) lives in judge-prompt.ts, free of zod so
// that workflows may import it (see shape-check.ts); this module holds the verdict's contract.
export * from './judge-prompt';
import { VERDICT_TOOL_NAME } from './judge-prompt';

/** The verdict tool's input, as the judge must send it. */
export const VerdictInputSchema = z
  .object({
    passed: z.boolean(),
    reason: z.string(),
    failed_items: z.array(z.string()),
    required_correction: z.string(),
  })
  .strict();
export type VerdictInput = z.infer<typeof VerdictInputSchema>;

/** The tool definition of `submit_verdict`. */
export const VERDICT_TOOL: ToolDefinition = {
  name: VERDICT_TOOL_NAME,
  description:
    'Submit your verdict on the candidate. failed_items lists the rubric items (verbatim) that the candidate fails; required_correction says what must change for it to pass.',
  inputSchema: {
    type: 'object',
    properties: {
      passed: { type: 'boolean', description: 'true only if every rubric item is satisfied' },
      reason: { type: 'string', description: 'why, citing the candidate' },
      failed_items: { type: 'array', items: { type: 'string' }, description: 'rubric items that fail, verbatim' },
      required_correction: { type: 'string', description: 'what the next attempt must change; empty when passed' },
    },
    required: ['passed', 'reason', 'failed_items', 'required_correction'],
    additionalProperties: false,
  },
};

/** The judge's parsed verdict: a pass, a fail, or a fail because the answer could not be read. */
export interface ParsedVerdict {
  passed: boolean;
  reason: string;
  failedItems: string[];
  requiredCorrection: string;
}

const UNPARSEABLE = 'unparseable_verdict';

function unparseable(detail: string): ParsedVerdict {
  return {
    passed: false,
    reason: `${UNPARSEABLE}: ${detail}`,
    failedItems: [],
    requiredCorrection: 'the judge gave no readable verdict; the candidate is not accepted',
  };
}

/**
 * Reads the verdict from the judge's answer and fails closed: no tool call, more than one,
 * malformed input, or a self-contradicting verdict (passed with failed items) is a fail
 * whose reason starts with `unparseable_verdict`.
 */
export function parseVerdict(content: readonly ContentBlock[]): ParsedVerdict {
  const calls = content.filter((b): b is ToolUseBlock => b.type === 'tool_use' && b.name === VERDICT_TOOL_NAME);
  const [call] = calls;
  if (call === undefined) return unparseable(`no ${VERDICT_TOOL_NAME} call in the judge's answer`);
  if (calls.length > 1) return unparseable(`${calls.length} ${VERDICT_TOOL_NAME} calls; expected exactly one`);
  const parsed = VerdictInputSchema.safeParse(call.input);
  if (!parsed.success) return unparseable(zodIssues(parsed.error).join('; '));
  const v = parsed.data;
  if (v.passed && v.failed_items.length > 0) return unparseable('passed=true but failed_items is not empty');
  return {
    passed: v.passed,
    reason: v.reason,
    failedItems: v.failed_items,
    requiredCorrection: v.required_correction,
  };
}
