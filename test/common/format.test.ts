import { z } from 'zod';
import { zodIssues } from '../../common/format';

const issuesOf = (schema: z.ZodType, value: unknown): string[] => {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected the value to fail the schema');
  return zodIssues(result.error);
};

describe('zodIssues', () => {
  test('gives one `path: message` line per issue, with nested paths joined by dots', () => {
    const schema = z.object({
      task: z.string().min(1, { message: 'say what to do' }),
      budget: z.object({ max: z.number() }),
    });
    const issues = issuesOf(schema, { task: '', budget: { max: 'three' } });
    expect(issues).toHaveLength(2);
    expect(issues).toContain('task: say what to do');
    expect(issues.find((l) => l.startsWith('budget.max: '))).toBeDefined();
  });

  test('names array elements by their index', () => {
    expect(issuesOf(z.object({ rubric: z.array(z.string()) }), { rubric: ['ok', 3] })[0]).toMatch(/^rubric\.1: /);
  });

  test('uses (root) when the value itself is at fault', () => {
    const issues = issuesOf(z.string(), 42);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^\(root\): \S/);
  });

  test('an unknown key on a strict object is reported at (root) with the key named', () => {
    const issues = issuesOf(z.object({ a: z.string() }).strict(), { a: 'x', surprise: 1 });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^\(root\): .*surprise/);
  });
});
