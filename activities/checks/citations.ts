import { parseDuration } from '../../common/duration';
import { ConfigError } from '../../common/errors';
import { must } from '../../common/must';
import { testId } from '../../common/test-results';
import type { CitationsCheck } from '../../common/loop-spec';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { runTestCommand } from '../discovery/run-tests';
import type { Sandbox } from '../sandbox/sandbox';
import { matchTests } from '../tests/test-names';
import { resolveInsideAsync } from '../tools/confine';
import { formatBytes, MAX_READ_BYTES, readRegularFile } from '../tools/text-files';
import { ToolError } from '../tools/types';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';

/** A `path:line` (or `path:line-line`) citation: the path has a file extension, e.g. `src/math.js:3`. */
const CITATION = /(?<![\w./@-])((?:[\w@-][\w.@-]*\/)*[\w@-][\w.@-]*\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?/g;

export interface Citation {
  text: string;
  path: string;
  line: number;
  endLine?: number;
}

/** Every distinct `path:line` citation in a text, in order. */
export function findCitations(text: string): Citation[] {
  const seen = new Map<string, Citation>();
  for (const m of text.matchAll(CITATION)) {
    if (!seen.has(m[0]))
      seen.set(m[0], {
        text: m[0],
        path: must(m[1], 'CITATION has a path group'),
        line: Number(m[2]),
        ...(m[3] ? { endLine: Number(m[3]) } : {}),
      });
  }
  return [...seen.values()];
}

/** A file's lines as the check counts them: a last line without a newline counts too. */
function lineCount(bytes: Buffer): number {
  let newlines = 0;
  for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) newlines += 1;
  return bytes.length > 0 && bytes[bytes.length - 1] === 10 ? newlines : newlines + 1;
}

/**
 * The lines of the cited file, or why it cannot be cited. The file is the agent's to write (a
 * loop may give it commands): it is found and read as read_file finds and reads it (confine.ts,
 * text-files.ts), never beyond the workspace or into the worker's own files, asynchronously and
 * at most MAX_READ_BYTES of it, so a huge file cannot hold or exhaust the worker.
 */
async function citedLines(root: string, cited: string): Promise<number | string> {
  let file: string;
  try {
    file = await resolveInsideAsync(root, cited);
  } catch (err) {
    if (err instanceof ToolError) return err.message;
    throw err;
  }
  try {
    const { bytes, size } = await readRegularFile(file, cited);
    if (bytes === null)
      return `${cited} is ${formatBytes(size)}, over the ${formatBytes(MAX_READ_BYTES)} a cited file may have (read_file's limit)`;
    return lineCount(bytes);
  } catch (err) {
    if (err instanceof ToolError) return `${cited} does not exist`;
    throw err;
  }
}

/** Why a citation does not hold, or null when it does; `lines` is the cited file's {@link citedLines}. */
function badCitation(c: Citation, lines: number | string): string | null {
  if (typeof lines === 'string') return `${c.text}: ${lines}`;
  const last = c.endLine ?? c.line;
  if (c.line < 1 || last < c.line || last > lines) return `${c.text}: ${c.path} has ${lines} lines`;
  return null;
}

/**
 * The citations check: every `path:line` the candidate cites exists in the workspace, at least
 * one is cited, and (with `testCommand`) the named test fails in a fresh run of the tests, so
 * the report is about a real failure. The run goes through the test-results layer
 * (activities/tests/): the test is found by identity in what the runner reported (its full name,
 * `file > name`, pytest's node id, or its own name without suites), not in the printed output;
 * a run that reports no tests fails the check with the reason. The tests run in the worker's
 * sandbox, and the verdict says which. Each bad citation is named in the reason. A command whose
 * runner cannot be told is a non-retryable `ConfigError`.
 */
export async function runCitationsCheck(
  input: { check: CitationsCheck; candidate: string; workspace: string; env?: Record<string, string> },
  sandbox?: Sandbox,
): Promise<Verdict> {
  const { check, workspace } = input;
  const citations = findCitations(input.candidate);
  const problems: string[] = [];
  const failedItems: string[] = [];
  if (citations.length === 0) {
    problems.push('the diagnosis cites no evidence as path:line');
    failedItems.push('no citations');
  }
  const files = new Map<string, number | string>();
  for (const c of citations) {
    let lines = files.get(c.path);
    if (lines === undefined) files.set(c.path, (lines = await citedLines(workspace, c.path)));
    const bad = badCitation(c, lines);
    if (bad) {
      problems.push(`bad citation ${bad}`);
      failedItems.push(c.text);
    }
  }
  let evidence = `${citations.length} citations: ${citations.map((c) => c.text).join(', ') || 'none'}`;
  let ranIn: Verdict['sandbox'];
  if (check.testCommand) {
    const { failing, run } = await runTestCommand(
      {
        cwd: workspace,
        testCommand: check.testCommand,
        timeoutMs: parseDuration(check.timeout) ?? 600_000,
        env: input.env,
      },
      sandbox,
    ).catch((err: unknown) => {
      // The runner cannot be told from the command: the loop's configuration, not the diagnosis, is wrong.
      if (err instanceof ConfigError)
        throw nonRetryableFailure(FailureType.Config, `check ${check.name}: ${err.message}`);
      throw err;
    });
    ranIn = run.sandbox;
    const named = matchTests(run.results, check.testName, run.runner);
    evidence += `\nfailing in a fresh run of \`${check.testCommand}\` (${run.runner}, ${run.results.length} tests): ${failing.map((f) => f.name).join('; ') || 'none'}`;
    if (named.length) evidence += `\n"${check.testName}": ${named.map((t) => `${testId(t)} ${t.outcome}`).join('; ')}`;
    if (run.timedOut) {
      problems.push(`\`${check.testCommand}\` timed out after ${check.timeout}`);
      failedItems.push('test fails');
    } else if (run.results.length === 0) {
      problems.push(`\`${check.testCommand}\` reported no tests in a fresh run: ${run.problem ?? 'no results'}`);
      failedItems.push('test fails');
    } else if (!named.some((t) => t.outcome === 'failed')) {
      const seen = named.length
        ? `it ran: ${named.map((t) => `${testId(t)} ${t.outcome}`).join('; ')}`
        : 'no test of that name ran';
      problems.push(`the test "${check.testName}" does not fail in a fresh run of \`${check.testCommand}\` (${seen})`);
      failedItems.push('test fails');
    }
  }
  const passed = problems.length === 0;
  return {
    check: check.name,
    kind: 'citations',
    passed,
    reason: passed ? `all ${citations.length} citations exist and "${check.testName}" fails` : problems.join('; '),
    failedItems,
    requiredCorrection: passed
      ? ''
      : 'cite only lines that exist (path:line, relative to the repository root, with line numbers you have read), and at least one',
    evidence,
    ...(ranIn ? { sandbox: ranIn } : {}),
    usage: { ...ZERO_USAGE },
  };
}
