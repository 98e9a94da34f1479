import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
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

/** Why a citation does not hold in `root`, or null when it does. */
function badCitation(root: string, c: Citation): string | null {
  const file = path.resolve(root, c.path);
  const rel = path.relative(root, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return `${c.text}: ${c.path} is outside the workspace`;
  if (!existsSync(file) || !statSync(file).isFile()) return `${c.text}: ${c.path} does not exist`;
  if (!realpathSync(file).startsWith(realpathSync(root) + path.sep))
    return `${c.text}: ${c.path} leads outside the workspace`;
  const text = readFileSync(file, 'utf8');
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
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
  for (const c of citations) {
    const bad = badCitation(workspace, c);
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
