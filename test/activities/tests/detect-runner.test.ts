import { detectRunner, UnknownTestRunnerError } from '../../../activities/tests/detect-runner';
import { appendArgs, runnerInvocation } from '../../../activities/tests/invocation';
import { ConfigError } from '../../../common/errors';

const pkg = (scripts: Record<string, string>) => JSON.stringify({ name: 'x', scripts });

describe('detectRunner', () => {
  test.each([
    ['node --test', 'node'],
    ['node --test test/', 'node'],
    ['NODE_ENV=test node --test --test-concurrency=1 "test/**/*.test.js"', 'node'],
    ['jest', 'jest'],
    ['npx jest --ci', 'jest'],
    ['npx --yes jest', 'jest'],
    ['./node_modules/.bin/jest src', 'jest'],
    ['node node_modules/jest/bin/jest.js', 'jest'],
    ['cross-env CI=1 jest', 'jest'],
    ['vitest run', 'vitest'],
    ['pnpm exec vitest run', 'vitest'],
    ['pytest -q tests', 'pytest'],
    ['python3 -m pytest', 'pytest'],
    ['poetry run pytest', 'pytest'],
    ['uv run pytest -x', 'pytest'],
    ['go test ./...', 'go'],
    ['cd svc && go test -count=1 ./...', 'go'],
    ['npm run build && npx jest', 'jest'],
    ['timeout 300 pytest', 'pytest'],
  ])('%s runs %s', (command, runner) => {
    expect(detectRunner(command)).toBe(runner);
  });

  test('npm test, npm run X, yarn X and pnpm test read the script from package.json, through scripts that call scripts', () => {
    const text = pkg({ test: 'npm run unit', unit: 'jest --ci', 'test:py': 'pytest', e2e: 'vitest run' });
    expect(detectRunner('npm test', text)).toBe('jest');
    expect(detectRunner('npm t', text)).toBe('jest');
    expect(detectRunner('npm run test:py', text)).toBe('pytest');
    expect(detectRunner('yarn e2e', text)).toBe('vitest');
    expect(detectRunner('pnpm test', pkg({ test: 'node --test' }))).toBe('node');
  });

  test('unknown commands, missing scripts and script loops are undefined, not a guess', () => {
    expect(detectRunner('make test')).toBeUndefined();
    expect(detectRunner('npm test')).toBeUndefined();
    expect(detectRunner('npm test', '{not json')).toBeUndefined();
    expect(detectRunner('npm test', pkg({ test: 'npm test' }))).toBeUndefined();
    expect(detectRunner('node scripts/run-all.js')).toBeUndefined();
  });

  test('the error for an unknown runner is a ConfigError that says how to name it', () => {
    const err = new UnknownTestRunnerError('make test');
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(
      /cannot tell which test runner `make test` runs: give it as `runner` \(node, jest, vitest, pytest or go\), or `runner: "junit"` with `junitPath`/,
    );
  });
});

describe('runnerInvocation', () => {
  const dirs = { resultsDir: '/tmp/r', reporterFile: '/tmp/rep/loopwright-reporter.mjs' };

  test('flags go after -- for npm scripts (once), straight after the command otherwise', () => {
    expect(appendArgs('npm test', ['--json'])).toBe('npm test -- --json');
    expect(appendArgs('npm run unit -- --ci', ['--json'])).toBe('npm run unit -- --ci --json');
    expect(appendArgs('npx jest', ['--json'])).toBe('npx jest --json');
    expect(appendArgs('yarn test', ['--json'])).toBe('yarn test --json');
  });

  test('per runner: jest --json, vitest json reporter, pytest xunit1 junitxml, go -json to a file, node through NODE_OPTIONS', () => {
    expect(runnerInvocation('jest', 'npx jest', dirs).command).toBe(
      "npx jest --json --outputFile='/tmp/r/jest.json' --testLocationInResults",
    );
    expect(runnerInvocation('vitest', 'vitest run', dirs).command).toBe(
      "vitest run --reporter=default --reporter=json --outputFile.json='/tmp/r/vitest.json' --includeTaskLocation",
    );
    expect(runnerInvocation('pytest', 'pytest', dirs).command).toBe(
      "pytest --junitxml='/tmp/r/pytest.xml' -o junit_family=xunit1",
    );
    expect(runnerInvocation('go', 'go test ./...', dirs).command).toBe(
      "{ go test ./... -json\n} > '/tmp/r/go-test.jsonl'",
    );
    const node = runnerInvocation('node', 'npm test', dirs, { NODE_OPTIONS: '--max-old-space-size=512' });
    expect(node.command).toBe('npm test');
    // Only NODE_OPTIONS changes: no other variable marks the gate's runs.
    expect(node.env).toEqual({
      NODE_OPTIONS:
        '--max-old-space-size=512 --test-reporter=spec --test-reporter-destination=stdout --test-reporter="/tmp/rep/loopwright-reporter.mjs" --test-reporter-destination=stdout',
    });
    expect(runnerInvocation('junit', 'mvn test', dirs)).toEqual({ command: 'mvn test', env: {} });
  });
  test('with the results channel: jest and vitest get the reporter module, pytest the plugin (its folder on PYTHONPATH), go the wrapper; no results file', () => {
    const channel = (file: string) => ({ ...dirs, channel: { file, node: '/usr/bin/node' } });
    expect(runnerInvocation('jest', 'npx jest', channel('/tmp/rep/reporter.cjs'))).toEqual({
      command: "npx jest --reporters=default --reporters='/tmp/rep/reporter.cjs' --testLocationInResults",
      env: {},
    });
    expect(runnerInvocation('vitest', 'vitest run', channel('/tmp/rep/reporter.mjs')).command).toBe(
      "vitest run --reporter=default --reporter='/tmp/rep/reporter.mjs' --includeTaskLocation",
    );
    expect(runnerInvocation('pytest', 'pytest', channel('/tmp/rep/rab12.py'), { PYTHONPATH: 'src' })).toEqual({
      command: "pytest -p rab12 --junitxml='/tmp/rep/rab12.xml' -o junit_family=xunit1",
      env: { PYTHONPATH: '/tmp/rep:src', PYTHONPYCACHEPREFIX: '/tmp/pyc' },
    });
    // The wrapper runs without the loop's NODE_OPTIONS; the go command gets them back.
    expect(runnerInvocation('go', 'go test ./...', channel('/tmp/rep/run.mjs'), { NODE_OPTIONS: '--x' }).command).toBe(
      "unset NODE_OPTIONS; exec '/usr/bin/node' '/tmp/rep/run.mjs' 'export NODE_OPTIONS='\\''--x'\\''\n{ go test ./... -json\n}'",
    );
  });
});
