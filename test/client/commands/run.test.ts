import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseInputArg } from '../../../client/commands/run';
import { UsageError } from '../../../common/errors';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'loopwright-run-unit-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The UsageError `fn` throws (fails the test when it throws nothing or something else). */
function usageErrorOf(fn: () => unknown): UsageError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error('expected a UsageError, nothing was thrown');
}

describe('parseInputArg', () => {
  test('parses inline JSON', () => {
    expect(parseInputArg('{"task":"t","rubric":["a"],"maxAttempts":2}')).toEqual({
      task: 't',
      rubric: ['a'],
      maxAttempts: 2,
    });
  });

  test('reads @file and parses its JSON', () => {
    const file = path.join(dir, 'input.json');
    writeFileSync(file, JSON.stringify({ task: 'from a file', rubric: ['x'] }, null, 2));
    expect(parseInputArg(`@${file}`)).toEqual({ task: 'from a file', rubric: ['x'] });
  });

  test('a missing --input is a UsageError that says how to pass it', () => {
    const err = usageErrorOf(() => parseInputArg(undefined));
    expect(err.message).toBe('missing --input: pass the loop input as JSON or @file');
    expect(err.exitCode).toBe(2);
  });

  test('a missing @file is a one-line UsageError naming the file and the cause', () => {
    const file = path.join(dir, 'nope.json');
    const err = usageErrorOf(() => parseInputArg(`@${file}`));
    expect(err.message).toBe(`cannot read input file ${file}: ENOENT`);
    expect(err.message).not.toContain('\n');
    expect(err.exitCode).toBe(2);
  });

  test('a directory given as @file is a UsageError, not a crash', () => {
    expect(usageErrorOf(() => parseInputArg(`@${dir}`)).message).toMatch(/^cannot read input file .*: EISDIR$/);
  });

  test.each(['{task: "t"}', 'not json', '', '{"task":"t",}'])(
    'invalid inline JSON %j is a one-line UsageError',
    (text) => {
      const err = usageErrorOf(() => parseInputArg(text));
      expect(err.message).toMatch(/^--input is not valid JSON \(.+\): pass JSON or @file$/);
      expect(err.message).not.toContain('\n');
      expect(err.exitCode).toBe(2);
    },
  );

  test('a @file holding invalid JSON is a UsageError', () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, '{"task": "t", "rubric": [}');
    expect(usageErrorOf(() => parseInputArg(`@${file}`)).message).toMatch(/^--input is not valid JSON/);
  });
});
