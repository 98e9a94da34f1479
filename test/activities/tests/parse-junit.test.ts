import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { TestResultsError } from '../../../activities/tests/limits';
import { parseJunitXml } from '../../../activities/tests/parse-junit';
import { FIXTURES, fixture, outcomes, sampleRoot } from './fixtures';

const PYTEST = {
  'tests/test_math.py > test_multiplies': 'passed',
  'tests/test_math.py > test_adds': 'failed',
  'tests/test_math.py > test_skipped': 'skipped',
  'tests/test_math.py > test_skips_inside': 'skipped',
  'tests/test_math.py > test_known_bug': 'todo',
  'tests/test_math.py > test_unexpectedly_passes': 'passed',
  'tests/test_math.py > test_param[1]': 'passed',
  'tests/test_math.py > test_param[2]': 'failed',
  'tests/test_math.py > test_setup_error': 'failed',
  'tests/test_math.py > TestOuter > test_in_class': 'passed',
  'tests/test_math.py > TestOuter > TestInner > test_deep': 'failed',
};
const inSample =
  (...dirs: string[]) =>
  (rel: string) =>
    dirs.some((d) => existsSync(path.join(FIXTURES, d, rel)));
const pytest = (file: string, fileExists?: (f: string) => boolean) =>
  parseJunitXml(fixture(`pytest/${file}`), { workspace: sampleRoot('pytest'), dialect: 'pytest', fileExists });

describe('parseJunitXml, pytest 9 --junitxml', () => {
  test('xunit1: file, classes inside it and test name; skip is skipped, xfail todo, xpass passed, a setup error failed', () => {
    expect(outcomes(pytest('xunit1.xml'))).toEqual(PYTEST);
  });

  test('lines are 1-based (pytest reports 0-based) and messages are decoded', () => {
    const adds = pytest('xunit1.xml').find((t) => t.name === 'test_adds')!;
    expect(adds).toEqual({
      file: 'tests/test_math.py',
      name: 'test_adds',
      outcome: 'failed',
      line: 12,
      message: 'assert -1 == 5\n +  where -1 = add(2, 3)',
    });
  });

  test('xunit2 (no file attribute): dotted class names are mapped back to the test file when it exists', () => {
    expect(outcomes(pytest('xunit2.xml', inSample('pytest/sample')))).toEqual(PYTEST);
    expect(pytest('xunit2.xml')[0]).toEqual({
      file: null,
      name: 'tests.test_math > test_multiplies',
      outcome: 'passed',
    });
  });

  test('a file that failed to collect is a failed test named by the file (and pytest ran nothing else)', () => {
    expect(pytest('collection-error.xml')).toEqual([
      { file: 'tests/test_broken.py', name: 'tests/test_broken.py', outcome: 'failed', message: 'collection failure' },
    ]);
  });
});

describe('parseJunitXml, Maven Surefire 3.5 (JUnit 5)', () => {
  test('classname > name; <error> and <failure> fail, <skipped> (@Disabled) is skipped; no file', () => {
    const dir = path.join(FIXTURES, 'junit', 'surefire');
    const results = readdirSync(dir)
      .sort()
      .flatMap((f) => parseJunitXml(fixture(`junit/surefire/${f}`), { workspace: sampleRoot('maven') }));
    expect(outcomes(results)).toEqual({
      'com.example.MathUtilTest > errors': 'failed',
      'com.example.MathUtilTest > adds': 'failed',
      'com.example.MathUtilTest > multiplies': 'passed',
      'com.example.MathUtilTest > skipped': 'skipped',
      'com.example.MathUtilTest$Negative > multipliesNegatives': 'passed',
    });
    expect(results.find((t) => t.name.endsWith('adds'))!.message).toBe('expected: <5> but was: <-1>');
  });
});

describe('parseJunitXml on hostile input', () => {
  test('a DOCTYPE (entity expansion) is refused before parsing', () => {
    const laughs =
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><testsuite><testcase name="&lol2;"/></testsuite>';
    expect(() => parseJunitXml(laughs, { workspace: '/w' })).toThrow(/DOCTYPE or entity declarations/);
  });

  test('XML that is not JUnit, and nesting deeper than 64, are TestResultsErrors', () => {
    expect(() => parseJunitXml('<html><body/></html>', { workspace: '/w' })).toThrow(
      /neither <testsuites> nor <testsuite>/,
    );
    const deep = `${'<testsuite>'.repeat(200)}${'</testsuite>'.repeat(200)}`;
    expect(() => parseJunitXml(deep, { workspace: '/w' })).toThrow(TestResultsError);
  });

  test('generic JUnit: nested suites, absolute file attributes made relative, classname equal to name not repeated', () => {
    const xml =
      '<testsuites><testsuite name="a"><testsuite name="b"><testcase classname="t" name="t" file="/w/src/a.test.js" line="3"><skipped/></testcase></testsuite></testsuite></testsuites>';
    expect(parseJunitXml(xml, { workspace: '/w' })).toEqual([
      { file: 'src/a.test.js', name: 't', outcome: 'skipped', line: 3 },
    ]);
  });
});
