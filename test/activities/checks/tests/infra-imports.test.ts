import { infraImports } from '../../../../activities/checks/tests/infra-imports';

const BASE = [
  'calc/__init__.py',
  'calc/math.py',
  'calc/testing.py',
  'lib/__init__.py',
  'lib/check.py',
  'tests/test_math.py',
  'tests/helpers.py',
  'src/math.js',
  'src/assertions.js',
  'test/helpers/index.js',
  'test/math.test.js',
  'internal/check/check.go',
  'pkg/foo/foo.go',
  'pkg/foo/testing.go',
  'calc.go',
  'calc_test.go',
];
const HELPERS = new Set([
  'calc/testing.py',
  'lib/check.py',
  'tests/test_math.py',
  'tests/helpers.py',
  'src/assertions.js',
  'test/helpers/index.js',
  'test/math.test.js',
  'internal/check/check.go',
  'pkg/foo/testing.go',
  'calc_test.go',
]);

const loads = (file: string, ...texts: string[]) =>
  infraImports(
    file,
    texts.map((text, i) => ({ line: i + 1, text })),
    HELPERS,
    BASE,
  ).map((i) => i.loads);

test('Python: absolute, from-, relative and sys.path imports of base helpers count; the code under test does not', () => {
  expect(loads('calc/math.py', 'import lib.check as _c')).toEqual(['lib/check.py']);
  expect(loads('calc/math.py', 'from lib.check import assert_equal')).toEqual(['lib/check.py']);
  expect(loads('calc/math.py', 'from lib import check, other')).toEqual(['lib/check.py']);
  expect(loads('calc/math.py', 'from . import testing')).toEqual(['calc/testing.py']);
  expect(loads('calc/math.py', 'from .testing import assert_equal')).toEqual(['calc/testing.py']);
  expect(loads('calc/math.py', 'import os, helpers')).toEqual(['tests/helpers.py']);
  expect(loads('calc/math.py', 'import os', 'from calc import math', 'import calc.math', '# import lib.check')).toEqual(
    [],
  );
});

test('JavaScript: relative requires and imports of base helpers (with the extensions and index files node tries) count; packages do not', () => {
  expect(loads('src/math.js', "const a = require('./assertions');")).toEqual(['src/assertions.js']);
  expect(loads('src/math.js', "import { check } from '../test/helpers';")).toEqual(['test/helpers/index.js']);
  expect(loads('src/math.js', "const m = await import('../test/math.test.js');")).toEqual(['test/math.test.js']);
  expect(loads('src/math.js', "const fs = require('node:fs');", "const x = require('./other');")).toEqual([]);
});

test('Go: a package made only of test helpers, imported or reached by go:linkname, counts; a production package that also holds a helper file does not', () => {
  expect(loads('calc.go', 'import "example.com/calc/internal/check"')).toEqual(['internal/check/check.go']);
  expect(loads('calc.go', '\tc "example.com/calc/internal/check"')).toEqual(['internal/check/check.go']);
  expect(loads('calc.go', '\t"example.com/calc/pkg/foo"', '\t"fmt"')).toEqual([]);
  expect(loads('calc_test.go', '\t"example.com/calc/internal/check"')).toEqual([]);
  expect(loads('calc.go', '//go:linkname eps example.com/calc/internal/check.Epsilon')).toEqual([
    'internal/check/check.go',
  ]);
  expect(loads('calc.go', '//go:linkname now runtime.nanotime', '// "example.com/calc/internal/check"')).toEqual([]);
});
