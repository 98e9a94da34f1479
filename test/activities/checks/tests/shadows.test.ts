import { pythonShadows, shadowingFiles } from '../../../../activities/checks/tests/shadows';

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

test("an added Python module or package below another folder, named like one of base's top-level ones, stands in for it; files in base's own packages do not", () => {
  const base = ['calc/__init__.py', 'calc/math.py', 'src/util.py', 'tests/test_math.py', 'setup.py'];
  expect(
    pythonShadows(
      [
        'tests/calc/__init__.py',
        'tests/calc/math.py',
        'tests/util.py',
        'calc/extra.py',
        'tests/test_reg.py',
        'src/other.py',
      ],
      base,
    ),
  ).toEqual([
    { file: 'tests/calc/__init__.py', shadows: 'calc/__init__.py' },
    { file: 'tests/calc/math.py', shadows: 'calc/__init__.py' },
    { file: 'tests/util.py', shadows: 'src/util.py' },
  ]);
});
