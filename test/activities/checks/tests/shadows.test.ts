import { shadowingFiles } from '../../../../activities/checks/tests/shadows';

/**
 * An added file that a module loader would load in place of base's test infrastructure is found;
 * new tests and helpers with names of their own are not.
 */
test('a file loaded in place of a base helper is found: no extension, an earlier extension, a folder index, a Python package', () => {
  const base = [
    'test/helpers.js',
    'test/fixtures/data.json',
    'test/util/index.js',
    'tests/conf.py',
    'test/math.test.js',
  ];
  expect(
    shadowingFiles(
      [
        'test/helpers',
        'test/fixtures/data.js',
        'test/util.js',
        'tests/conf/__init__.py',
        'test/new.test.js',
        'src/helpers',
      ],
      base,
    ),
  ).toEqual([
    { file: 'test/helpers', shadows: 'test/helpers.js' },
    { file: 'test/fixtures/data.js', shadows: 'test/fixtures/data.json' },
    { file: 'test/util.js', shadows: 'test/util/index.js' },
    { file: 'tests/conf/__init__.py', shadows: 'tests/conf.py' },
  ]);
});

test('new test files, new helpers and files beside nothing of base are not shadows', () => {
  expect(
    shadowingFiles(
      ['test/add-regression.test.js', 'test/helpers2.js', 'test/fixtures/more.json', '.env.example'],
      ['test/helpers.js', 'test/fixtures/data.json', 'test/math.test.js', '.env'],
    ),
  ).toEqual([]);
});
