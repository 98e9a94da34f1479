import { runSchemaCheck } from '../../../activities/checks/schema';
import type { SchemaCheck } from '../../../common/loop-spec';
import { ZERO_USAGE } from '../../../common/usage';

const check: SchemaCheck = {
  kind: 'schema',
  name: 'shape',
  schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
};

describe('runSchemaCheck', () => {
  test('valid JSON that matches the schema passes with no failed items', () => {
    const verdict = runSchemaCheck(check, '{"answer": 42}');
    expect(verdict).toMatchObject({
      check: 'shape',
      kind: 'schema',
      passed: true,
      failedItems: [],
      requiredCorrection: '',
    });
  });

  test('a candidate in a ```json fence passes', () => {
    expect(runSchemaCheck(check, '```json\n{"answer": 42}\n```').passed).toBe(true);
  });

  test('a candidate in a bare ``` fence with surrounding blank lines passes', () => {
    expect(runSchemaCheck(check, '\n```\n{ "answer": 1.5 }\n```\n').passed).toBe(true);
  });

  test('text that is not JSON fails with a reason that gives the parser problem', () => {
    const verdict = runSchemaCheck(check, 'The answer is 42.');
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toMatch(/^the candidate is not JSON: /);
    expect(verdict.reason).toMatch(/Unexpected token|not valid JSON/);
    expect(verdict.failedItems).toEqual(['shape']);
    expect(verdict.requiredCorrection).toContain('JSON');
    expect(verdict.evidence).toBe(verdict.reason);
  });

  test('JSON followed by prose outside a fence fails: only one whole fence is tolerated', () => {
    expect(runSchemaCheck(check, '{"answer": 42} is my answer').passed).toBe(false);
  });

  test('a field of the wrong type fails naming the field', () => {
    const verdict = runSchemaCheck(check, '{"answer": "forty-two"}');
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('does not match the schema');
    expect(verdict.reason).toContain('answer');
    expect(verdict.requiredCorrection).toContain('answer');
  });

  test('a missing required field fails naming the field', () => {
    const verdict = runSchemaCheck(check, '{"other": 1}');
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('answer');
  });

  test('a JSON value that is not an object fails', () => {
    expect(runSchemaCheck(check, '[42]').passed).toBe(false);
  });

  test('costs nothing: usage is zero whether it passes or fails', () => {
    expect(runSchemaCheck(check, '{"answer": 1}').usage).toEqual(ZERO_USAGE);
    expect(runSchemaCheck(check, 'nope').usage).toEqual(ZERO_USAGE);
  });
});
