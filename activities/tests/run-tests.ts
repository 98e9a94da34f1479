import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../common/errors';
import { testId, type TestResult, type TestRunner } from '../../common/test-results';
import { isWithin } from '../sandbox/profile';
import type { Sandbox, SandboxName } from '../sandbox/sandbox';
import { capHeadTail } from '../tools/output';
import { detectRunner, UnknownTestRunnerError } from './detect-runner';
import { pytestReportPath, runnerInvocation, type ChannelModule } from './invocation';
import { LIMITS, TestResultsError } from './limits';
import { nodeReporterSource } from './node-reporter';
import { goWrapperSource, jestReporterSource, pytestPluginSource, vitestReporterSource } from './channel-reporters';
import { parseGoTestJson, goOutputText } from './parse-go';
import { parseJestJson, parseVitestJson } from './parse-jest';
import { parseJunitXml } from './parse-junit';
import { parseNodeEvents } from './parse-node';
import { junitTarget, readJunitReports } from './read-results';
import { openResultsChannel, type ResultsChannel } from './results-channel';

export { detectRunner, UnknownTestRunnerError };

/** What to run: the loop's test command, and its runner when it cannot be told from the command. */
export interface TestSpec {
  command: string;
  runner?: TestRunner;
  /** For `junit`: the file or folder, relative to the workspace, where the runner writes JUnit XML. */
  junitPath?: string;
}

/** Where and how to run it. */
export interface RunTestsOptions {
  sandbox: Sandbox;
  /** The checkout the tests run in (the sandbox's only writable folder besides the results folder). */
  workspace: string;
  /** The loop's command environment (`spec.sandbox.env`). */
  env?: Record<string, string>;
  /** Files and folders (absolute, inside the workspace, no symlinks) the command may read but not change. */
  readOnly?: string[];
  timeoutMs: number;
  signal?: AbortSignal;
  heartbeat?: () => void;
}

/** One run of a test command, by test identity. */
export interface TestRun {
  runner: TestRunner;
  /** Every test the runner reported, in its order (at most 50,000). */
  results: TestResult[];
  /** What the command printed (head and tail, at most about 200,000 characters). */
  output: string;
  code: number | null;
  timedOut: boolean;
  sandbox: SandboxName;
  /** Why results are missing or incomplete; absent when the runner reported normally. */
  problem?: string;
  /**
   * Why the results cannot be trusted as the runner's own: another process of the run tried to
   * send results, or the runner was cut off (and something else could follow it).
   */
  tampered?: string;
}

const NO_RESULTS_HINT: Record<TestRunner, string> = {
  node: "did the command run node's test runner (node --test, or a file that uses node:test)?",
  jest: 'did the command run jest, and does it end with jest (the flags --reporters are appended to it)? A test file that calls process.exit stops jest before it writes its report',
  vitest: 'did the command run vitest, and does it end with vitest (its --reporter flags are appended to it)?',
  pytest:
    'did the command run pytest, and does it end with pytest (-p and --junitxml are appended to it)? The plugin they name is found through PYTHONPATH: a command that clears the environment (python -E, tox without passenv) cannot load it',
  go: 'did the command run go test, and does it end with it (-json is appended to it)?',
  junit: 'did the command run the tests, and does the runner write JUnit XML to junitPath?',
};

/** The workspace's package.json, for telling the runner of `npm test` (at most 1 MB, a regular file). */
function packageJson(workspace: string): string | undefined {
  const file = path.join(workspace, 'package.json');
  try {
    const st = lstatSync(file);
    return st.isFile() && st.size <= 1024 * 1024 ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a file (relative) exists in the workspace, for mapping pytest's dotted names to files. */
function fileExistsIn(workspace: string): (rel: string) => boolean {
  return (rel) => {
    const p = path.join(workspace, rel);
    try {
      return isWithin(workspace, p) && lstatSync(p).isFile();
    } catch {
      return false;
    }
  };
}

/**
 * What a connection reports that an earlier connection already reported: a test file (any test
 * in it, or the file's own failure to load), or, for a result without a file, the same test.
 * Runners that follow each other (`node --test a && node --test b`) run different files; a
 * process of the run that connects once the runner has ended can only add to files the runner
 * already ran, by tests it never reported as passed or failed (a file that failed to load has
 * none), or report a test again with another outcome.
 */
function reportedAgain(perConnection: TestResult[][]): string[] {
  const seen = new Set<string>();
  const again = new Set<string>();
  for (const results of perConnection) {
    const keys = new Set(results.map((t) => t.file ?? testId(t)));
    for (const key of keys) if (seen.has(key)) again.add(key);
    for (const key of keys) seen.add(key);
  }
  return [...again];
}

/**
 * The module that sends `runner`'s results to `socket`, and where it goes in `dir`. pytest's has a
 * name no file of the repository can have taken beforehand (`python -m pytest` puts the working
 * folder on sys.path ahead of PYTHONPATH, where a module of the same name would win).
 */
function channelModuleFile(
  runner: Exclude<TestRunner, 'junit'>,
  dir: string,
  socket: string,
): { file: string; source: string } {
  switch (runner) {
    case 'node':
      return { file: path.join(dir, 'reporter.mjs'), source: nodeReporterSource({ socket }) };
    case 'jest':
      return { file: path.join(dir, 'reporter.cjs'), source: jestReporterSource(socket) };
    case 'vitest':
      return { file: path.join(dir, 'reporter.mjs'), source: vitestReporterSource(socket) };
    case 'pytest': {
      const file = path.join(dir, `r${randomBytes(8).toString('hex')}.py`);
      return { file, source: pytestPluginSource(socket, pytestReportPath(file)) };
    }
    case 'go':
      return { file: path.join(dir, 'run.mjs'), source: goWrapperSource(socket, LIMITS.fileBytes) };
  }
}

function parse(runner: Exclude<TestRunner, 'junit'>, text: string, workspace: string): TestResult[] {
  switch (runner) {
    case 'node':
      return parseNodeEvents(text, workspace);
    case 'jest':
      return parseJestJson(text, workspace);
    case 'vitest':
      return parseVitestJson(text, workspace);
    case 'pytest':
      return parseJunitXml(text, { workspace, dialect: 'pytest', fileExists: fileExistsIn(workspace) });
    case 'go':
      return parseGoTestJson(text);
  }
}

/**
 * Runs a test command in the sandbox with its runner's structured reporter, and returns each test
 * the runner reported, by identity (file + full name) and outcome. The runner is `spec.runner`,
 * else `junit` when `junitPath` is given, else told from the command and package.json
 * (`detectRunner`); when it cannot be told this throws UnknownTestRunnerError (a ConfigError that
 * says how to name it). The command runs as `sh -c` with the runner's flags (invocation.ts), in
 * `workspace`, killed at `timeoutMs` or when `signal` aborts, heartbeating; a worker without a
 * sandbox throws SandboxUnavailableError.
 *
 * The worker makes a folder outside the workspace (under the OS temporary folder) and removes it
 * afterwards: nothing is written into the workspace. Every runner but `junit` sends its results
 * through a socket the worker listens on there (results-channel.ts), from a module the worker
 * wrote for the run, read-only in the sandbox (node-reporter.ts, channel-reporters.ts), which
 * connects before any of the repository's code runs: no results file lies where the run could
 * write, make or rewrite it. When something else in the run connects to the socket, or the
 * runner is cut off, `tampered` says so, and the gate takes the run as no evidence. A `results`
 * folder there stays writable inside the sandbox, as before; nothing is read from it.
 * For `junit` the reports are read from `junitPath` in the workspace; reports
 * older than the run are skipped. Whatever the runner wrote is untrusted (the run executed the
 * agent's code): it is size-capped and parsed, never executed, and a report that cannot be read
 * leaves `results` empty with the reason in `problem`.
 */
export async function runTests(spec: TestSpec, opts: RunTestsOptions): Promise<TestRun> {
  const workspace = realpathSync(opts.workspace);
  const runner = spec.runner ?? (spec.junitPath ? 'junit' : detectRunner(spec.command, packageJson(workspace)));
  if (!runner) throw new UnknownTestRunnerError(spec.command);
  if (runner === 'junit' && !spec.junitPath) {
    throw new ConfigError(
      'runner junit needs junitPath: the file or folder, relative to the repository, where the test runner writes JUnit XML (e.g. target/surefire-reports)',
    );
  }
  if (runner === 'junit') junitTarget(workspace, spec.junitPath!);

  // Neutral names: the paths are in the command line and NODE_OPTIONS the tests can see.
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'tr-'));
  try {
    if (isWithin(workspace, realpathSync(scratch)))
      throw new ConfigError(
        `the temporary folder ${os.tmpdir()} lies inside the workspace ${workspace}: set TMPDIR on the worker to a folder outside it`,
      );
    const resultsDir = path.join(scratch, 'results');
    await mkdir(resultsDir, { mode: 0o700 });
    let reporterFile: string | undefined;
    let channelModule: ChannelModule | undefined;
    let channel: ResultsChannel | undefined;
    if (runner !== 'junit') {
      const reporterDir = path.join(scratch, 'reporter');
      await mkdir(reporterDir, { mode: 0o700 });
      const socket = path.join(scratch, 'r.sock');
      if (Buffer.byteLength(socket) > 100)
        throw new ConfigError(
          `the temporary folder ${os.tmpdir()} has too long a path for the test results socket: set TMPDIR on the worker to a shorter one`,
        );
      // node: one runner after another may report (`node --test a && node --test b`); the others send one whole report.
      channel = await openResultsChannel(socket, LIMITS.fileBytes, { single: runner !== 'node' });
      const written = channelModuleFile(runner, reporterDir, channel.path);
      await writeFile(written.file, written.source, { mode: 0o444 });
      if (runner === 'node') reporterFile = written.file;
      else channelModule = { file: written.file, ...(runner === 'go' ? { node: realpathSync(process.execPath) } : {}) };
    }
    const inv = runnerInvocation(runner, spec.command, { resultsDir, reporterFile, channel: channelModule }, opts.env);
    const moduleFile = reporterFile ?? channelModule?.file;
    const since = Date.now();
    const run = await opts.sandbox
      .run(['sh', '-c', inv.command], {
        workspace,
        // Exactly the agent's environment (the loop's declared variables), plus what the runner needs to report.
        env: { ...opts.env, ...inv.env },
        // pytest's plugin is imported from its folder, with the path its junitxml writes to (caught in memory).
        readable: [
          ...(moduleFile && channel ? [runner === 'pytest' ? path.dirname(moduleFile) : moduleFile, channel.path] : []),
          ...(opts.readOnly ?? []),
        ],
        writable: [resultsDir],
        timeoutMs: opts.timeoutMs,
        capChars: LIMITS.output,
        signal: opts.signal,
        heartbeat: opts.heartbeat,
      })
      .catch(async (err: unknown) => {
        await channel?.close(0);
        throw err;
      });
    opts.heartbeat?.();

    const problems: string[] = [];
    let results: TestResult[] = [];
    let output = run.output;
    let tampered: string | undefined;
    if (channel) {
      const sent = await channel.close();
      if (runner === 'node') {
        // Another runner may follow one that ended (`node --test a && node --test b`), but never
        // report from a file an earlier one reported: a process of the run that connects after
        // the runner ended could otherwise add a worse outcome for a test (the canary's) to hide
        // its own, or a pass for a test its file's failure kept from running.
        const again = reportedAgain(sent.connections.map((text) => parseNodeEvents(text, workspace)));
        if (again.length > 0)
          sent.problems.push(
            `a later connection reported tests from ${again.length === 1 ? 'a file' : 'files'} an earlier runner had reported (${again.slice(0, 3).join(', ')}${again.length > 3 ? ', ...' : ''}): each test file is run by one runner only`,
          );
        if (again.length > 0) tampered = sent.problems.join('; ');
        results = parseNodeEvents(sent.text, workspace);
      } else if (runner !== 'junit' && sent.text.trim() !== '') {
        try {
          results = parse(runner, sent.text, workspace);
        } catch (err) {
          if (!(err instanceof TestResultsError)) throw err;
          sent.problems.push(err.message);
        }
        if (runner === 'go')
          output = capHeadTail(`${goOutputText(sent.text)}${run.output ? `\n${run.output}` : ''}`, LIMITS.output);
      }
      if (sent.intrusions > 0 || (sent.cutOff && !run.timedOut)) tampered = sent.problems.join('; ');
      problems.push(...sent.problems);
    } else {
      const read = await readJunitReports(workspace, spec.junitPath!, since);
      results = read.results;
      problems.push(...read.problems);
    }
    if (results.length >= LIMITS.results) problems.push(`only the first ${LIMITS.results} results are kept`);
    if (results.length === 0 && problems.length === 0) {
      const ownReporters =
        runner === 'node' && output.includes("must match the number of specified '--test-reporter-destination'");
      problems.push(
        ownReporters
          ? 'the command gives --test-reporter without --test-reporter-destination, which node refuses next to the reporters Loopwright adds: give both, or neither'
          : `the runner wrote no results: ${NO_RESULTS_HINT[runner]}`,
      );
    }
    if (run.timedOut)
      problems.unshift(
        `the command timed out after ${Math.round(opts.timeoutMs / 1000)}s, so the results are those reported before it was killed`,
      );
    return {
      runner,
      results: results.slice(0, LIMITS.results),
      output,
      code: run.code,
      timedOut: run.timedOut,
      sandbox: run.sandbox,
      ...(problems.length ? { problem: problems.join('; ') } : {}),
      ...(tampered ? { tampered } : {}),
    };
  } finally {
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}
