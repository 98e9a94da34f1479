import { parseNodeEvents } from '../../../activities/tests/parse-node';
import { fixture, outcomes, sampleRoot } from './fixtures';

const results = () => parseNodeEvents(fixture('node/events.jsonl'), sampleRoot('node'));

describe('parseNodeEvents (node 20 test runner, through Loopwright reporter)', () => {
  test('names every test by file and full name (describe suites and parent tests joined with " > ") with its outcome', () => {
    expect(outcomes(results())).toEqual({
      'test/esm.test.mjs > esm suite > esm passes': 'passed',
      'test/exit.test.js > test/exit.test.js': 'passed',
      'test/math.test.js > multiply multiplies two numbers': 'passed',
      'test/math.test.js > add adds two numbers': 'failed',
      'test/math.test.js > skipped with an option': 'skipped',
      'test/math.test.js > skipped with a quoted option': 'skipped',
      'test/math.test.js > skipped with an expression': 'skipped',
      'test/math.test.js > skipped with a reason': 'skipped',
      'test/math.test.js > skipped through the skip export': 'skipped',
      'test/math.test.js > only without --test-only': 'passed',
      'test/math.test.js > todo that fails': 'todo',
      'test/math.test.js > todo without a body': 'todo',
      'test/math.test.js > outer > inner > deep passes': 'passed',
      'test/math.test.js > outer > inner > deep fails': 'failed',
      'test/math.test.js > outer > mid passes': 'passed',
      'test/math.test.js > skipped suite (on purpose: parser fixture)': 'skipped',
      'test/math.test.js > suite whose hook fails > after the failed hook': 'not_run',
      'test/math.test.js > suite whose hook fails': 'failed',
      'test/math.test.js > parent test > child passes': 'passed',
      'test/math.test.js > parent test > child fails': 'failed',
      'test/math.test.js > parent test > child not awaited': 'not_run',
      'test/math.test.js > parent test': 'failed',
      'test/syntax.test.js > test/syntax.test.js': 'failed',
      'test/throws.test.js > test/throws.test.js': 'failed',
    });
  });

  test('a file that exits early shows only as itself: the tests written in it are absent, so a caller comparing identities sees them missing', () => {
    const exit = results().filter((t) => t.file === 'test/exit.test.js');
    expect(exit).toEqual([{ file: 'test/exit.test.js', name: 'test/exit.test.js', outcome: 'passed', line: 1 }]);
  });

  test('keeps the line and the failure message, relative files with / separators', () => {
    const add = results().find((t) => t.name === 'add adds two numbers')!;
    expect(add).toEqual({
      file: 'test/math.test.js',
      name: 'add adds two numbers',
      outcome: 'failed',
      line: 9,
      message: 'Expected values to be strictly equal:\n\n-1 !== 5\n',
    });
    expect(results().every((t) => t.file && !t.file.startsWith('/'))).toBe(true);
  });

  test('passing suites are not results; a suite that is skipped whole or fails on its own is', () => {
    const names = results().map((t) => t.name);
    expect(names).not.toContain('outer');
    expect(names).not.toContain('esm suite');
    expect(names).toEqual(
      expect.arrayContaining(['skipped suite (on purpose: parser fixture)', 'suite whose hook fails']),
    );
  });

  test('ignores torn, foreign and malformed lines, and files outside the workspace stay absolute', () => {
    const text = [
      '{"type":"test:start","name":"a","nesting":0,"file":"/elsewhere/a.test.js","line":1}',
      '{"type":"test:pass","name":"a","nesting":0,"file":"/elsewhere/a.test.js","line":1}',
      '{"type":"test:pass","name":42,"nesting":0}',
      '{"type":"test:diagnostic","message":"tests 1"}',
      'not json',
      '{"type":"test:fail","name":"b","nest',
    ].join('\n');
    expect(parseNodeEvents(text, '/work')).toEqual([
      { file: '/elsewhere/a.test.js', name: 'a', outcome: 'passed', line: 1 },
    ]);
  });
});
