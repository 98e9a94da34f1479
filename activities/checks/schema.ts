import { z } from 'zod';
import { zodIssues } from '../../common/format';
import type { SchemaCheck } from '../../common/loop-spec';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';

const FENCE = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/;

/**
 * The candidate must be JSON matching the check's JSON Schema. One surrounding Markdown code
 * fence (```json ... ```) is tolerated, since models often add it; anything else that is not
 * JSON fails with the parser's reason.
 */
export function runSchemaCheck(check: SchemaCheck, candidate: string): Verdict {
  const verdict = (passed: boolean, reason: string, correction: string): Verdict => ({
    check: check.name,
    kind: 'schema',
    passed,
    reason,
    failedItems: passed ? [] : [check.name],
    requiredCorrection: correction,
    evidence: reason,
    usage: { ...ZERO_USAGE },
  });
  const text = FENCE.exec(candidate)?.[1] ?? candidate;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return verdict(
      false,
      `the candidate is not JSON: ${(err as Error).message.replace(/\s+/g, ' ').slice(0, 200)}`,
      'answer with JSON only, matching the schema',
    );
  }
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(check.schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    return verdict(
      false,
      `the check's JSON Schema cannot be used: ${(err as Error).message}`,
      "fix the loop spec (this is not the agent's fault)",
    );
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return verdict(true, 'the candidate matches the schema', '');
  const issues = zodIssues(parsed.error);
  return verdict(false, `the candidate does not match the schema: ${issues.join('; ')}`, `fix: ${issues.join('; ')}`);
}
