import { workerGit } from '../../git/worker-git';

/**
 * Test helpers by what they use, wherever they are and whatever their names: a file that imports
 * a test framework (or, in JavaScript, calls a runner's `expect(...).toBe`-style matchers or its
 * mock functions) is there for the tests. Base's tests assert through such a helper
 * (`src/assertions.js` calling jest's `expect`, `lib/check.py` calling `pytest.fail`, a Go
 * package `internal/check` taking a `*testing.T`), so a change that makes it assert nothing
 * passes them as they are written, without fixing anything. The gate counts these files as test
 * infrastructure (base's version in its overlay run, read-only in every run) and the change
 * policy lets a change only add to them; so are such files the change adds (not in the overlay
 * run). A file of base's code that the change makes import a test framework stays code: the
 * gate's canary and the change policy's test detection look at what it does.
 *
 * What counts:
 * - JavaScript and TypeScript: `node:test`, `@jest/globals`, `vitest` (and `@vitest/*`), `chai`,
 *   `expect`, `mocha`, `ava`, `tap`, `uvu`, `jasmine`, `sinon`, `should`, `power-assert` and
 *   `@testing-library/*`, by `require`, `import` or `import()`; a line calling a global
 *   `expect(...)` with a jest matcher (`.toBe`, `.toEqual`, `.toMatch...`, `.toHave...`,
 *   `.toContain`, `.toThrow`, `.resolves`/`.rejects`, `.not`) or chai's `.to.`; `jest.fn`,
 *   `jest.mock`, `jest.spyOn`, `vi.fn`, ... calls.
 * - Python: `pytest` (and `_pytest`, `pytest_*` plugins), `unittest` (with `unittest.mock`),
 *   `hypothesis`, `nose`, `nose2`, `testtools`, `testfixtures`, `django.test`, and any
 *   `*.testing` module (`numpy.testing`, `pandas.testing`).
 * - Go: the `testing` packages (`testing`, `testing/quick`, ...), testify, gomega and ginkgo,
 *   gotest.tools (non-test `.go` files; test files count by their names already).
 * Not counted: `node:assert` / `assert` and Python's `assert` statement, which production code
 * uses for its own invariants: counting them would keep base's version of such code in the
 * overlay run, and an honest fix there could never pass. A helper that asserts only that way, with
 * no test-like name nor folder, is still the change's code in the overlay run.
 *
 * The cost: a repository whose product is test tooling (a pytest plugin, a library of jest
 * matchers, a Go package of test helpers) cannot have a fix to such a file judged by the gate;
 * its code under test counts as test infrastructure. So can production code that imports one of
 * these (`unittest.mock` in a module that is not a test's): a fix to it does not reach the
 * overlay run.
 */

const JS_MODULES = String.raw`node:test|@jest/globals|vitest|@vitest/[^'"]+|chai|chai/[^'"]+|expect|mocha|ava|tap|uvu|uvu/[^'"]+|jasmine|sinon|should|power-assert|@testing-library/[^'"]+`;
const S = '[[:space:]]*';
const NOT_MEMBER = '(^|[^.A-Za-z0-9_$])';
const JS_PATTERNS = [
  // require('x'), import('x')
  String.raw`(require|import)${S}\(${S}['"](${JS_MODULES})['"]`,
  // import ... from 'x', import 'x', export ... from 'x'
  String.raw`(from|import)${S}['"](${JS_MODULES})['"]`,
  // a global expect with a jest or chai matcher
  String.raw`${NOT_MEMBER}expect${S}\(.*\)${S}\.${S}(not${S}\.${S})?((resolves|rejects)${S}\.${S})?(to(Be|Equal|StrictEqual|Match|Have|Contain|Throw|Satisfy)|to${S}\.)`,
  // the runners' mock functions
  String.raw`${NOT_MEMBER}(jest|vi)\.(fn|mock|doMock|spyOn|unmock)${S}\(`,
];
const JS_FILES = ['*.js', '*.cjs', '*.mjs', '*.jsx', '*.ts', '*.tsx', '*.mts', '*.cts'];

const PY_MODULES = String.raw`pytest|_pytest|pytest_[A-Za-z0-9_]+|unittest|hypothesis|nose|nose2|testtools|testfixtures|django\.test|[A-Za-z_][A-Za-z0-9_.]*\.testing`;
const PY_PATTERNS = [
  String.raw`^${S}from[[:space:]]+(${PY_MODULES})([[:space:].]|$)`,
  String.raw`^${S}import[[:space:]]+([A-Za-z0-9_.]+([[:space:]]+as[[:space:]]+[A-Za-z0-9_]+)?${S},${S})*(${PY_MODULES})([[:space:].,]|$)`,
];

const GO_PATTERNS = [
  String.raw`^${S}(import[[:space:]]+)?([A-Za-z_.][A-Za-z0-9_]*[[:space:]]+)?"(testing|testing/[^"]+|github\.com/stretchr/testify(/[^"]*)?|github\.com/onsi/(gomega|ginkgo)(/v[0-9]+)?(/[^"]*)?|gotest\.tools(/v[0-9]+)?(/[^"]*)?)"${S}(//.*)?$`,
];

async function grepFiles(repo: string, tree: string, patterns: string[], pathspecs: string[]): Promise<string[]> {
  const out = await workerGit(
    repo,
    ['grep', '-l', '-z', '-I', '-E', ...patterns.flatMap((p) => ['-e', p]), tree, '--', ...pathspecs],
    { maxBuffer: 64 * 1024 * 1024 },
  ).catch(() => ''); // git grep exits 1 when nothing matches
  const prefix = `${tree}:`;
  return out
    .split('\0')
    .filter((f) => f.startsWith(prefix))
    .map((f) => f.slice(prefix.length));
}

/** The files of `trees` (each a tree id of `repo`) that use a test framework, as paths relative to the root. */
export async function testFrameworkUsers(repo: string, trees: Iterable<string>): Promise<Set<string>> {
  const found = await Promise.all(
    [...new Set(trees)].flatMap((tree) => [
      grepFiles(repo, tree, JS_PATTERNS, JS_FILES),
      grepFiles(repo, tree, PY_PATTERNS, ['*.py']),
      grepFiles(repo, tree, GO_PATTERNS, ['*.go']),
    ]),
  );
  return new Set(found.flat());
}
