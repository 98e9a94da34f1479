import { existsSync } from 'node:fs';
import path from 'node:path';
import { BASE_REF } from '../../activities/agent/workspace';
import { GitError, workerGit } from '../../activities/git/worker-git';
import { UsageError } from '../../common/errors';
import type { Redaction } from '../../common/redact';
import type { RunRecord } from '../../common/run-record';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { runRedaction } from '../run-redaction';
import {
  buildReview,
  renderReview,
  reviewedAttempt,
  reviewJson,
  type Review,
  type ReviewDiff,
  type ReviewTarget,
} from '../review';
import { isImprovement } from '../improve';

export interface ReviewOptions {
  json?: boolean;
  attempt?: string;
  /** False for `--no-diff`. */
  diff?: boolean;
}

/** Most bytes of a patch read from git; a larger one is reported, not printed. */
export const MAX_PATCH_BYTES = 8 * 1024 * 1024;

/**
 * `review <id> [--json] [--attempt N] [--no-diff]`: what a person needs to approve or review a
 * run (see client/review.ts): the header, each check's verdict and evidence, the test results,
 * the judge's reasons and the diff of the run's branch. Text is redacted and escaped (no control
 * sequence of the run's reaches the terminal) and coloured only on a terminal without NO_COLOR;
 * `--json` prints the `Review`. A run with no attempt to review, or an unknown id, exits 2.
 */
export async function reviewCommand(
  client: LoopwrightClient,
  id: string,
  opts: ReviewOptions,
  io: Output,
  env: Record<string, string | undefined>,
): Promise<number> {
  const n = opts.attempt === undefined ? undefined : Number(opts.attempt);
  if (n !== undefined && !(Number.isInteger(n) && n >= 1))
    throw new UsageError(`--attempt must be an attempt number (1, 2, ...), not "${opts.attempt}"`);
  if (await isImprovement(client, id)) {
    throw new UsageError(
      `${id} is an improvement run, not a loop run: see \`loopwright status ${id}\`; each of its evaluation runs (${id}/eval/...) can be reviewed`,
    );
  }
  const review = await reviewOf(await client.status(id), {
    attempt: n,
    diff: opts.diff !== false,
    redaction: await runRedaction(client, id),
  });
  if (opts.json) io.out(reviewJson(review));
  else renderReview(review, { color: colorFor(process.stdout, env) }).forEach((l) => io.out(l));
  return 0;
}

/** Colour only on a terminal, unless NO_COLOR is set to anything (https://no-color.org) or TERM is dumb. */
export function colorFor(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** The review of a run's attempt (see {@link reviewedAttempt}), with its diff unless `diff: false`. */
export async function reviewOf(
  record: RunRecord,
  opts: { attempt?: number; diff?: boolean; redaction?: Redaction } = {},
): Promise<Review> {
  const target = reviewedAttempt(record, opts.attempt);
  const diff: ReviewDiff =
    opts.diff === false ? { status: 'skipped', reason: 'not shown (--no-diff)' } : await readReviewDiff(record, target);
  return buildReview(record, target, diff, opts.redaction);
}

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const DIFF_FLAGS = [
  '--no-color',
  '--no-ext-diff',
  '--no-textconv',
  '--ignore-submodules=dirty',
  '--src-prefix=a/',
  '--dst-prefix=b/',
];

/**
 * `git diff base head` of the run's branch, read through workerGit (nothing of the repository's
 * runs: it is a repository the agent wrote to).
 * - head: the attempt's commit; when it changed nothing, the last earlier attempt's commit (the
 *   branch as it stood); for an attempt still waiting for a review (not in the record yet), the
 *   branch's tip. Approving lands the branch's tip, which is that commit.
 * - base: the first parent of the first commit the run recorded (the worker made it on the
 *   branch's starting point), so the diff stays the same after the fix lands or main moves; when
 *   no attempt has a recorded commit yet, where the branch started in the run's own repository
 *   (its BASE_REF), or for a run with a linked worktree, the merge-base of the branch and the
 *   repository's HEAD (what the workspace itself uses).
 * A repository this machine cannot read is `unavailable`, in one line; never an error.
 */
export async function readReviewDiff(record: RunRecord, target: ReviewTarget): Promise<ReviewDiff> {
  const ws = record.workspace;
  if (!ws?.branch)
    return {
      status: 'none',
      reason: ws ? 'none: the run worked in place, not on a branch of its own' : 'none: the run has no git workspace',
    };
  if (!existsSync(ws.root))
    return {
      status: 'unavailable',
      reason: `not readable here: the workspace ${ws.root} is not on this machine (its worker has it; review branch ${ws.branch} there)`,
    };
  const run = (args: string[], cwd = ws.root) =>
    workerGit(cwd, args, { timeoutMs: 60_000, maxBuffer: MAX_PATCH_BYTES });
  const git = (args: string[], cwd = ws.root) => run(args, cwd).then((o) => o.trim());
  try {
    // Commits come from the worker's own plumbing; checked anyway, since they become git arguments.
    const commits = record.attempts.flatMap((a) =>
      a.commit && SHA.test(a.commit) ? [{ n: a.n, commit: a.commit }] : [],
    );
    const tip = () => git(['rev-parse', '--verify', '--quiet', `refs/heads/${ws.branch}^{commit}`]);
    // A target awaiting review is not in the record yet; approving lands the branch's tip.
    const head = target.awaitingReview ? await tip() : commits.filter((c) => c.n <= target.n).at(-1)?.commit;
    if (!head) return { status: 'none', reason: `none: attempt ${target.n} changed no file` };
    const first = commits[0]?.commit;
    // A run's own repository keeps where its branch started (BASE_REF); a linked worktree of a run
    // from before those shares the repository, whose HEAD it forked from.
    const base = first
      ? await git(['rev-parse', '--verify', '--quiet', `${first}^1`])
      : (await git(['rev-parse', '--verify', '--quiet', `${BASE_REF}^{commit}`]).catch(() => '')) ||
        (await git(['merge-base', 'HEAD', head], path.resolve(ws.root, await git(['rev-parse', '--git-common-dir']))));
    if (base === head) return { status: 'none', reason: `none: attempt ${target.n} changed no file` };
    const stat = (await run(['diff', '--stat', ...DIFF_FLAGS, base, head, '--'])).trimEnd();
    try {
      const patch = await run(['diff', ...DIFF_FLAGS, base, head, '--']);
      return { status: 'ok', base, head, stat, patch, truncated: false };
    } catch (err) {
      if (err instanceof GitError && /output passed/.test(err.reason))
        return { status: 'ok', base, head, stat, patch: '', truncated: true };
      throw err;
    }
  } catch (err) {
    const why = err instanceof GitError ? err.reason : err instanceof Error ? err.message : String(err);
    return { status: 'unavailable', reason: `not readable here: git in ${ws.root} failed (${why.split('\n')[0]})` };
  }
}

/** `review <id> [--json] [--attempt N] [--no-diff]`. */
export const reviewDefinition: CommandDefinition = (program, { action, withClient, io, env }) => {
  program
    .command('review <id>')
    .description(
      "what to look at before you approve: the diff, each check's verdict and evidence, the test results, the judge's reasons, cost and attempts",
    )
    .option('--json', 'the review as JSON')
    .option('--attempt <n>', 'review this attempt (default: the one waiting for a human, else the last)')
    .option('--no-diff', 'leave out the diff')
    .action(action(withClient((client, id: string, opts) => reviewCommand(client, id, opts, io, env))));
};
