import { testProbes } from '../../../../activities/checks/diff-policy/test-detection';

/**
 * Lines a change adds to code that tell a test run from real use are found, whichever way they
 * look (a runner's variable, the command line, who loaded the module, the call stack, the test
 * framework, NODE_ENV against test); ordinary code, comments and the entry-script idiom are not.
 */
const lines = (...texts: string[]) => texts.map((text, i) => ({ line: i + 1, text }));
const probed = (file: string, ...texts: string[]) => testProbes(file, lines(...texts)).map((p) => p.text);

test('probes for a test run in JavaScript, TypeScript, Python and Go are each found with file, line and kind', () => {
  const js = [
    'if (process.env.NODE_TEST_CONTEXT) return a + b;',
    "if (process.env['JEST_WORKER_ID']) return 5;",
    'const underVitest = !!process.env.VITEST;',
    "if (process.argv.some((a) => a.includes('test'))) return a + b;",
    'const args = process . execArgv;',
    'if (require.main && /test/.test(require.main.filename)) return 5;',
    'if (module.parent) return 5;',
    "if (new Error().stack.includes('.test.js')) return 5;",
    'Error.prepareStackTrace = (e, s) => s;',
    "const t = require('node:test');",
    "import { it } from 'vitest';",
    "if (typeof describe === 'function') return 5;",
    "if (process.env.NODE_ENV === 'test') return 5;",
    "if (process.env.npm_lifecycle_event === 'test') return 5;",
    "for (const f of fs.readdirSync(path.join(__dirname, '../test/held-out'))) learn(f);",
    "const expected = fs.readFileSync(__dirname + '/../test', 'utf8');",
    "const src = fs.readFileSync('test/math.test.js', 'utf8');",
  ];
  expect(probed('src/math.ts', ...js)).toEqual(js);
  expect(testProbes('src/math.js', lines(js[0]!))).toEqual([
    { file: 'src/math.js', line: 1, text: js[0], what: "a test runner's variable" },
  ]);
  const py = [
    "if os.environ.get('PYTEST_CURRENT_TEST'):",
    "if 'pytest' in sys.modules:",
    "if sys.modules.get('unittest'):",
    'import pytest',
    "if any('test' in a for a in sys.argv):",
    'frame = sys._getframe(1)',
    'for f in inspect.stack():',
    "cases = open('tests/test_math.py').read()",
  ];
  expect(probed('calc/math.py', ...py)).toEqual(py);
  expect(probed('pkg/math.go', 'if testing.Testing() {', 'if strings.HasSuffix(os.Args[0], ".test") {')).toHaveLength(
    2,
  );
});

test('ordinary code, comments, the entry-script idiom, test files of Go and files that are not code are not probes', () => {
  expect(
    probed(
      'src/math.js',
      'return a + b;',
      '// process.argv is read by the CLI, not here',
      ' * typeof describe is not checked',
      'if (require.main === module) main();',
      'console.error(err.stack);',
      "if (process.env.NODE_ENV === 'production') cache();",
      "const testName = 'test';",
      "const mode = 'testing';",
      "const url = 'https://example.com/latest/';",
    ),
  ).toEqual([]);
  expect(probed('calc/math.py', 'return a + b', '# sys.argv is not used', 'if __name__ == "__main__":')).toEqual([]);
  expect(probed('pkg/math_test.go', 'if testing.Testing() {')).toEqual([]);
  expect(probed('README.md', 'process.argv')).toEqual([]);
});
