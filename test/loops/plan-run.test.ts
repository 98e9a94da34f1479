import { hashRubric } from '../../loops/rubric-hash';
import { planRun } from '../../loops/plan-run';
import { InputError, UsageError } from '../../common/errors';
import { parseDuration } from '../../common/duration';

const LOOP = 'evaluate-optimize';
const CONFIG = {
  models: { worker: 'w', checker: 'c' },
  prices: { w: { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25 } },
};
const RUBRIC = ['has three lines', 'mentions a crash'];
const valid = { task: 'Write a haiku about crashes.', rubric: RUBRIC };
const plan = (input: unknown) => planRun(LOOP, input, CONFIG, { kind: 'cli' });

/** The InputError `fn` throws (fails the test when it throws nothing or something else). */
function inputErrorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('expected an InputError, nothing was thrown');
}

describe('planRun evaluate-optimize', () => {
  test('valid input gives a spec whose judge check holds the rubric, with the configured models', () => {
    const result = plan(valid);
    expect(result.loop).toBe(LOOP);
    expect(result.task).toBe(valid.task);
    expect(result.spec.models).toEqual({ worker: 'w', checker: 'c' });
    expect(result.spec.checks).toEqual([{ kind: 'judge', name: 'judge', rubric: RUBRIC }]);
    expect(result.trigger).toEqual({ kind: 'cli' });
    expect(result.input).toEqual(valid);
  });

  test('defaults to 3 attempts and a 24h escalation timeout', () => {
    const { spec } = plan(valid);
    expect(spec.budget.maxAttempts).toBe(3);
    expect(spec.escalation.timeout).toBe('24h');
    expect(parseDuration(spec.escalation.timeout)).toBe(24 * 3_600_000);
  });

  test('honours maxAttempts and escalationTimeout when given', () => {
    const { spec } = plan({ ...valid, maxAttempts: 5, escalationTimeout: '30m' });
    expect(spec.budget.maxAttempts).toBe(5);
    expect(spec.escalation.timeout).toBe('30m');
  });

  test('rubricHash equals hashRubric(rubric) and is stable across plans', () => {
    const first = plan(valid);
    expect(first.rubricHash).toBe(hashRubric(RUBRIC));
    expect(first.rubricHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(plan({ ...valid }).rubricHash).toBe(first.rubricHash);
  });

  test('a rubric with other items or another order gets another hash', () => {
    const hash = plan(valid).rubricHash;
    expect(plan({ ...valid, rubric: [...RUBRIC].reverse() }).rubricHash).not.toBe(hash);
    expect(plan({ ...valid, rubric: [...RUBRIC, 'rhymes'] }).rubricHash).not.toBe(hash);
  });

  test.each<[string, Record<string, unknown>, string]>([
    ['a missing rubric', { task: 'x' }, 'rubric: '],
    ['an empty rubric', { ...valid, rubric: [] }, 'rubric: give at least one rubric item'],
    ['a blank rubric item', { ...valid, rubric: ['ok', '  '] }, 'rubric.1: '],
    ['a missing task', { rubric: RUBRIC }, 'task: '],
    [
      'a bad escalationTimeout "soon"',
      { ...valid, escalationTimeout: 'soon' },
      'escalationTimeout: expected a duration',
    ],
    ['maxAttempts 0', { ...valid, maxAttempts: 0 }, 'maxAttempts: '],
    ['a fractional maxAttempts', { ...valid, maxAttempts: 2.5 }, 'maxAttempts: '],
  ])('%s throws an InputError naming the field', (_scenario, input, line) => {
    const err = inputErrorOf(() => plan(input));
    expect(err.message).toContain(`invalid input for loop ${LOOP}: `);
    expect(err.message).toContain(line);
    expect(err.issues.some((i) => i.startsWith(line))).toBe(true);
    expect(err.exitCode).toBe(2);
    expect(err.message).not.toContain('\n');
  });

  test('an unknown extra field throws an InputError that names the field', () => {
    const err = inputErrorOf(() => plan({ ...valid, rubrik: ['typo'] }));
    expect(err.message).toContain('rubrik');
    expect(err.issues).toHaveLength(1);
  });

  test("commandEnv becomes the spec's sandbox environment; secret-looking names and HOME are refused", () => {
    expect(plan({ ...valid, commandEnv: { NODE_ENV: 'test' } }).spec.sandbox).toEqual({ env: { NODE_ENV: 'test' } });
    expect(plan(valid).spec.sandbox).toBeUndefined();
    expect(inputErrorOf(() => plan({ ...valid, commandEnv: { GITHUB_TOKEN: 'x' } })).issues.join('\n')).toMatch(
      /commandEnv.GITHUB_TOKEN: GITHUB_TOKEN looks like a secret, and a loop spec is stored in clear in the run's history/,
    );
    expect(inputErrorOf(() => plan({ ...valid, commandEnv: { HOME: '/root' } })).issues.join('\n')).toMatch(
      /HOME and TMPDIR point at the sandbox's private folders/,
    );
    expect(inputErrorOf(() => plan({ ...valid, commandEnv: { 'A B': 'x' } })).issues.join('\n')).toMatch(
      /use letters, digits and _/,
    );
  });

  test('input that is not an object throws an InputError', () => {
    expect(inputErrorOf(() => plan('a haiku please')).issues[0]).toMatch(/^\(root\): /);
  });

  test('an unknown loop throws a UsageError listing the known loops', () => {
    expect(() => planRun('fix-everything', valid, CONFIG, { kind: 'cli' })).toThrow(UsageError);
    expect(() => planRun('fix-everything', valid, CONFIG, { kind: 'cli' })).toThrow(
      /unknown loop "fix-everything": known loops are .*evaluate-optimize/,
    );
  });
});
