import { TestResultsError } from '../../../activities/tests/limits';
import { parseJestJson, parseVitestJson } from '../../../activities/tests/parse-jest';
import { fixture, outcomes, sampleRoot } from './fixtures';

describe('parseJestJson (jest 30 --json)', () => {
  const results = () => parseJestJson(fixture('jest/results.json'), sampleRoot('jest'));

  test('names tests by file and describe blocks; test.skip, xit and a skipped describe are skipped, test.todo is todo', () => {
    expect(outcomes(results())).toEqual({
      'test/math.test.js > math > multiplies': 'passed',
      'test/math.test.js > math > adds two numbers': 'failed',
      'test/math.test.js > math > skipped (on purpose: parser fixture)': 'skipped',
      'test/math.test.js > math > skipped with xit': 'skipped',
      'test/math.test.js > math > todo later': 'todo',
      'test/math.test.js > math > nested > deep passes': 'passed',
      'test/math.test.js > math > nested > deep fails': 'failed',
      'test/math.test.js > skipped suite (on purpose: parser fixture) > inside a skipped suite': 'skipped',
      'test/math.test.js > top level passes': 'passed',
      'test/hook.test.js > after a failed beforeAll': 'failed',
      'test/broken.test.js > test/broken.test.js': 'failed',
    });
  });

  test('a file that failed to run is a failed test named by the file, with jest message; tests keep their lines and messages without colours', () => {
    const broken = results().find((t) => t.file === 'test/broken.test.js')!;
    expect(broken.message).toMatch(/Test suite failed to run/);
    const add = results().find((t) => t.name === 'math > adds two numbers')!;
    expect(add.line).toBe(5);
    expect(add.message).toMatch(/Expected: 5/);
    expect(add.message).not.toMatch(/\x1b\[/);
  });

  test('output that is not jest JSON is a TestResultsError that says so', () => {
    expect(() => parseJestJson('{"testResults": nope', '/w')).toThrow(TestResultsError);
    expect(() => parseJestJson('{"numTotalTests": 0}', '/w')).toThrow(/no testResults list/);
  });

  test('an unknown status is not a pass', () => {
    const text = JSON.stringify({
      testResults: [
        {
          name: '/w/a.test.js',
          status: 'passed',
          assertionResults: [{ ancestorTitles: [], title: 't', status: 'weird' }],
        },
      ],
    });
    expect(parseJestJson(text, '/w')).toEqual([{ file: 'a.test.js', name: 't', outcome: 'not_run' }]);
  });
});

describe('parseVitestJson (vitest 3 --reporter=json)', () => {
  test('names tests by file and describe blocks; skip and todo as vitest reports them; a file that failed to load is a failed test', () => {
    const results = parseVitestJson(fixture('vitest/results.json'), sampleRoot('vitest'));
    expect(outcomes(results)).toEqual({
      'test/broken.test.js > test/broken.test.js': 'failed',
      'test/math.test.js > math > multiplies': 'passed',
      'test/math.test.js > math > adds two numbers': 'failed',
      'test/math.test.js > math > skipped (on purpose: parser fixture)': 'skipped',
      'test/math.test.js > math > todo later': 'todo',
      'test/math.test.js > math > nested > deep passes': 'passed',
      'test/math.test.js > math > nested > deep fails': 'failed',
      'test/math.test.js > skipped suite (on purpose: parser fixture) > inside a skipped suite': 'skipped',
      'test/math.test.js > top level passes': 'passed',
    });
    expect(results.find((t) => t.name === 'math > adds two numbers')).toMatchObject({
      line: 7,
      message: expect.stringMatching(/expected -1 to be 5/),
    });
    expect(results[0]?.message).toMatch(/Failed to parse source/);
  });
});
