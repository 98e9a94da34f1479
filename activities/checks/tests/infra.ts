import { RE2JS } from 're2js';
import { DEFAULT_TEST_PATTERN } from '../diff-policy/paths';

/**
 * Test infrastructure: what decides whether and how tests run, besides the code under test. Test
 * files and everything in test folders (helpers, fixtures, mocks, snapshots), mock and fixture
 * folders elsewhere, test helpers by their names wherever they are, and the runners' configuration files. The gate runs base's versions of
 * all of it, and the change policy lets a change only add to it.
 *
 * A file in a `node_modules`, `site-packages` or `vendor` folder (Go's, Composer's, Bundler's:
 * the toolchain takes a dependency from there by itself), a `go.work` (it points modules
 * elsewhere), and a `.pth` file, count as runner configuration: one the change adds or changes
 * would be loaded in place of the package base's tests require (a vendored assertion module
 * made to assert nothing), or run when Python starts. So does a distribution's metadata (a
 * `.dist-info` or `.egg-info` folder, an `.egg-link`) anywhere: where it lies on sys.path (the
 * root, under `python -m pytest`), pytest loads every plugin its `entry_points.txt` declares
 * (`[pytest11]`).
 *
 * `package.json` is not in it (a fix may need a dependency); a loop that wants it guarded keeps
 * it out of `allowedPaths`.
 */
const INFRA_DIRS = String.raw`(^|/)(spec|specs|__mocks__|__fixtures__|__snapshots__|fixtures|testdata|test_data)/`;
/**
 * Test helpers kept outside the test folders, by the names projects give them: a folder or a module
 * `testing`, `testutil(s)`, `test-utils`, `test_helpers`, `testsupport`, `testlib`, `testkit`
 * (Go's `internal/testutil`, Python's `calc/testing.py`, a root `test-utils/`). Base's tests
 * assert through them, so a change that makes one assert nothing passes them as they are written.
 * Helpers with other names count by what they use (a test framework: frameworks.ts), which the
 * gate and the change policy add to this matcher.
 */
const TEST_HELPERS = String.raw`(^|/)(testing|test[-_]?(utils?|helpers?|support|lib|kit|common))(/|\.[^/]+$)`;
const RUNNER_CONFIG = String.raw`(^|/)(conftest\.py|\.?pytest\.ini|\.?pytest\.toml|tox\.ini|noxfile\.py|\.coveragerc|jest\.config\.[cm]?[jt]s|jest\.config\.json|jest\.setup\.[cm]?[jt]sx?|setupTests\.[cm]?[jt]sx?|bunfig\.toml|\.swcrc|vitest\.config\.[cm]?[jt]s|vitest\.workspace\.[cm]?[jt]s|vite\.config\.[cm]?[jt]s|\.mocharc(\.[a-z]+)?|karma\.conf\.[cm]?[jt]s|ava\.config\.[cm]?js|babel\.config\.[cm]?js(on)?|\.babelrc(\.[a-z]+)?|\.nycrc(\.[a-z]+)?|phpunit\.xml(\.dist)?|sitecustomize\.py|usercustomize\.py|\.npmrc|\.yarnrc(\.yml)?|\.env(\..*)?|node_modules/.+|site-packages/.+|vendor/.+|go\.work(\.sum)?|[^/]+\.pth|[^/]+\.(dist|egg)-info/.+|[^/]+\.egg-link)$`;

/** True for a runner configuration file: the runner loads it by itself, so a new one changes how existing tests run. */
export function runnerConfigMatcher(): (file: string) => boolean {
  const re = RE2JS.compile(RUNNER_CONFIG);
  return (file) => re.test(file);
}

/** True for a path (relative, `/` separators) that is test infrastructure. */
export function testInfraMatcher(testPattern?: string): (file: string) => boolean {
  const re = RE2JS.compile(
    `(?:${testPattern ?? DEFAULT_TEST_PATTERN})|(?:${INFRA_DIRS})|(?:${TEST_HELPERS})|(?:${RUNNER_CONFIG})`,
  );
  return (file) => re.test(file);
}
