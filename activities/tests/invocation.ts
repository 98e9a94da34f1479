import path from 'node:path';
import type { TestRunner } from '../../common/test-results';

/** How a test command is run so that its runner writes structured results. */
export interface Invocation {
  /** What `sh -c` runs: the loop's command with the runner's flags. */
  command: string;
  /** Variables added to the command's environment. */
  env: Record<string, string>;
  /** Where the results are read from after the run (for `junit`, nothing: the loop's `junitPath`; with `channel`, nothing). */
  resultsFile?: string;
}

/**
 * The module the worker wrote for a run whose results go through the results socket
 * (channel-reporters.ts), read-only in the sandbox: jest's and vitest's reporter, pytest's plugin
 * (`<folder>/<module>.py`, the folder on PYTHONPATH), go's wrapper (run by `node`).
 */
export interface ChannelModule {
  file: string;
  /** go: the node binary that runs the wrapper (the worker's own, readable in the sandbox). */
  node?: string;
}

/** Where pytest's plugin (`<folder>/<module>.py`) has its junitxml write: a path in its read-only folder, caught in memory. */
export function pytestReportPath(pluginFile: string): string {
  return pluginFile.replace(/\.py$/, '.xml');
}

/** The file names inside the results folder. */
export const RESULTS_FILES: Record<Exclude<TestRunner, 'junit'>, string> = {
  node: 'node-events.jsonl',
  jest: 'jest.json',
  vitest: 'vitest.json',
  pytest: 'pytest.xml',
  go: 'go-test.jsonl',
};

/** A path as one shell word (the worker's own temporary paths; quoted all the same). */
function sh(p: string): string {
  return `'${p.replace(/'/g, `'\\''`)}'`;
}

/**
 * `command` with `args` appended. For `npm test` / `npm run X` they go after `--` (unless the
 * command has one already), so npm hands them to the script; yarn, pnpm and bun pass them on as
 * they are. Either way they land at the end of the command: it must end with the runner.
 */
export function appendArgs(command: string, args: string[]): string {
  const trimmed = command.trimEnd();
  const npmScript = /(^|[;&|(]\s*|\s)npm\s+(test|t|tst|run|run-script)\b/.test(trimmed);
  const dashes = npmScript && !/\s--(\s|$)/.test(trimmed) ? ' --' : '';
  return `${trimmed}${dashes} ${args.join(' ')}`;
}

/**
 * The command and environment that make `runner` write its results into `resultsDir`:
 * - node: NODE_OPTIONS adds the spec reporter (to stdout) and a reporter module
 *   (`reporterFile`, see node-reporter.ts) that appends events to the results file written into
 *   it. NODE_OPTIONS reaches `node --test` wherever the command starts
 *   it (`npm test`, `node --test test/`, a shell script), where flags after the files would not.
 * - jest: `--json --outputFile=<file> --testLocationInResults`.
 * - vitest: `--reporter=default --reporter=json --outputFile.json=<file> --includeTaskLocation`.
 * - pytest: `--junitxml=<file> -o junit_family=xunit1` (xunit1 has each test's file and line),
 *   and PYTHONPYCACHEPREFIX at a folder beside the results one, which the sandbox neither has nor
 *   lets anyone make: Python then reads no bytecode from `__pycache__` folders. A `.pyc` there
 *   (committed, or written by the code under test as the run goes) would otherwise be loaded in
 *   place of base's helper or test module: an unchecked-hash one never compares its source.
 * - go: `-json`, with the command's stdout (the test2json events) sent to a file.
 * - junit: the command as it is; the loop says where its runner writes JUnit XML.
 *
 * With `dirs.channel` (the gate's runs), jest, vitest, pytest and go write no results file: their
 * module (channel-reporters.ts) sends the same report through the worker's results socket.
 * - jest: `--reporters=default --reporters=<file> --testLocationInResults` (the command line's
 *   reporters replace the configuration's; the results are the same).
 * - vitest: `--reporter=default --reporter=<file> --includeTaskLocation`.
 * - pytest: `-p <module> --junitxml=<path in the module's folder> -o junit_family=xunit1`, the
 *   module's folder first on PYTHONPATH, PYTHONPYCACHEPREFIX as above.
 * - go: the node wrapper, which runs `<command> -json` (NODE_OPTIONS as the loop set it) and
 *   forwards its stdout; the wrapper itself runs without NODE_OPTIONS.
 */
export function runnerInvocation(
  runner: TestRunner,
  command: string,
  dirs: { resultsDir: string; reporterFile?: string; channel?: ChannelModule },
  env: Record<string, string> = {},
): Invocation {
  if (runner === 'junit') return { command, env: {} };
  if (dirs.channel && runner !== 'node') return channelInvocation(runner, command, dirs.resultsDir, dirs.channel, env);
  const resultsFile = path.join(dirs.resultsDir, RESULTS_FILES[runner]);
  switch (runner) {
    case 'node': {
      if (!dirs.reporterFile) throw new Error('node needs the reporter module written first');
      const ours = [
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter="${dirs.reporterFile}"`,
        '--test-reporter-destination=stdout',
      ];
      const nodeOptions = [env.NODE_OPTIONS?.trim(), ...ours].filter(Boolean).join(' ');
      return { command, env: { NODE_OPTIONS: nodeOptions }, resultsFile };
    }
    case 'jest':
      return {
        command: appendArgs(command, ['--json', `--outputFile=${sh(resultsFile)}`, '--testLocationInResults']),
        env: {},
        resultsFile,
      };
    case 'vitest':
      return {
        command: appendArgs(command, [
          '--reporter=default',
          '--reporter=json',
          `--outputFile.json=${sh(resultsFile)}`,
          '--includeTaskLocation',
        ]),
        env: {},
        resultsFile,
      };
    case 'pytest':
      return {
        command: appendArgs(command, [`--junitxml=${sh(resultsFile)}`, '-o', 'junit_family=xunit1']),
        env: { PYTHONPYCACHEPREFIX: path.join(path.dirname(dirs.resultsDir), 'pyc') },
        resultsFile,
      };
    case 'go':
      // The newline ends a trailing comment in the command; the group's stdout is the event stream.
      return { command: `{ ${appendArgs(command, ['-json'])}\n} > ${sh(resultsFile)}`, env: {}, resultsFile };
  }
}

function channelInvocation(
  runner: 'jest' | 'vitest' | 'pytest' | 'go',
  command: string,
  resultsDir: string,
  channel: ChannelModule,
  env: Record<string, string>,
): Invocation {
  const file = channel.file;
  switch (runner) {
    case 'jest':
      return {
        command: appendArgs(command, ['--reporters=default', `--reporters=${sh(file)}`, '--testLocationInResults']),
        env: {},
      };
    case 'vitest':
      return {
        command: appendArgs(command, ['--reporter=default', `--reporter=${sh(file)}`, '--includeTaskLocation']),
        env: {},
      };
    case 'pytest': {
      const module = path.basename(file).replace(/\.py$/, '');
      const pythonPath = [path.dirname(file), env.PYTHONPATH].filter(Boolean).join(':');
      return {
        command: appendArgs(command, [
          '-p',
          module,
          `--junitxml=${sh(pytestReportPath(file))}`,
          '-o',
          'junit_family=xunit1',
        ]),
        env: { PYTHONPATH: pythonPath, PYTHONPYCACHEPREFIX: path.join(path.dirname(resultsDir), 'pyc') },
      };
    }
    case 'go': {
      if (!channel.node) throw new Error('go needs the node binary that runs its wrapper');
      const nodeOptions = env.NODE_OPTIONS === undefined ? '' : `export NODE_OPTIONS=${sh(env.NODE_OPTIONS)}\n`;
      const inner = `${nodeOptions}{ ${appendArgs(command, ['-json'])}\n}`;
      return { command: `unset NODE_OPTIONS; exec ${sh(channel.node)} ${sh(file)} ${sh(inner)}`, env: {} };
    }
  }
}
