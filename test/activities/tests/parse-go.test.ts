import { goOutputText, parseGoTestJson } from '../../../activities/tests/parse-go';
import { fixture, outcomes } from './fixtures';

describe('parseGoTestJson (go 1.26 test -json)', () => {
  const results = () => parseGoTestJson(fixture('go/test.jsonl'));

  test('names tests by package, test and subtests; pass, fail and skip as go reports them; a package that did not build is a failed result', () => {
    expect(outcomes(results())).toEqual({
      'example.com/sample/mathx > TestAdd': 'failed',
      'example.com/sample/mathx > TestMul': 'passed',
      'example.com/sample/mathx > TestSkipped': 'skipped',
      'example.com/sample/mathx > TestTable': 'failed',
      'example.com/sample/mathx > TestTable > one': 'passed',
      'example.com/sample/mathx > TestTable > two_words': 'failed',
      'example.com/sample/mathx > TestTable > outer': 'passed',
      'example.com/sample/mathx > TestTable > outer > inner': 'passed',
      'example.com/sample/panics > TestFirst': 'passed',
      'example.com/sample/panics > TestPanics': 'failed',
      'example.com/sample/broken': 'failed',
    });
  });

  test('go names no file; a failure keeps what the test printed; the build failure keeps the compiler output', () => {
    expect(results().every((t) => t.file === null)).toBe(true);
    expect(results().find((t) => t.name.endsWith('TestAdd'))!.message).toMatch(/Add\(2, 3\) = -1, want 5/);
    expect(results().find((t) => t.name === 'example.com/sample/broken')!.message).toMatch(/undefined: undefinedThing/);
  });

  test('a test after a panic never started and is absent; one that started and never ended (its binary was killed) is not_run', () => {
    expect(results().some((t) => t.name.endsWith('TestAfter'))).toBe(false);
    const killed = [
      '{"Action":"run","Package":"p","Test":"TestSlow"}',
      '{"Action":"output","Package":"p","Test":"TestSlow","Output":"=== RUN   TestSlow\\n"}',
    ].join('\n');
    expect(parseGoTestJson(killed)).toEqual([{ file: null, name: 'p > TestSlow', outcome: 'not_run' }]);
  });

  test('the readable output is what go test prints without -json', () => {
    expect(goOutputText(fixture('go/test.jsonl'))).toMatch(/--- FAIL: TestAdd/);
  });
});
