import { ApplicationFailure } from '@temporalio/common';
import { CheckoutBlockedError, finishCheckout, requireUpdatable, updateCheckout } from './git/checkout';
import { commitTree, moveRef, resolveCommit, treeOf } from './git/commit-tree';
import { GitError, workerGit } from './git/worker-git';

const TRAILER = 'Loopwright-Effect';

export interface GitCommitEffectInput {
  /** `<workflow id>/<effect name>/<sequence>`: the same for every retry and every approval. */
  key: string;
  /** The repository the run worked on (its workspace). */
  repo: string;
  /** The run's branch with the verified change. */
  branch: string;
  targetBranch?: string;
  message: string;
}

export interface GitCommitEffectResult {
  target: string;
  commit: string;
  alreadyApplied: boolean;
}

function effectFailure(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'EffectError', nonRetryable: true, message });
}

const trim = (out: string) => out.trim();

/** The commit in `head`'s history that carries the effect's trailer, if any: the ledger is git history. */
async function findApplied(top: string, head: string, key: string): Promise<string | undefined> {
  const log = await workerGit(top, ['log', head, '--format=%H%x1f%(trailers:key=' + TRAILER + ',valueonly)%x1e', '--']);
  for (const entry of log.split('\x1e')) {
    const [sha, value] = entry.trim().split('\x1f');
    if (sha && value?.trim() === key) return sha;
  }
  return undefined;
}

/**
 * The tree of the run's branch applied to the target: the branch tip's own tree when the target
 * has not moved since the branch forked, else a real 3-way merge (`merge-tree --write-tree`,
 * objects only, no working tree). A conflict is a non-retryable `EffectError`.
 */
async function squashedTree(top: string, target: string, head: string, branch: string, tip: string): Promise<string> {
  const base = await workerGit(top, ['merge-base', head, tip]).then(trim, () => '');
  if (!base) throw effectFailure(`could not apply ${branch} onto ${target}: they share no history`);
  if (base === head) return treeOf(top, tip);
  try {
    return (await workerGit(top, ['merge-tree', '--write-tree', '--no-messages', '--name-only', head, tip])).split('\n')[0].trim();
  } catch (err) {
    if (!(err instanceof GitError) || err.exitCode !== 1) throw err;
    const files = err.stdout.split('\n').slice(1).filter(Boolean);
    throw effectFailure(`could not apply ${branch} onto ${target}: it conflicts with ${target} in ${files.slice(0, 10).join(', ') || 'some files'}`);
  }
}

/**
 * Applies a verified L2/L3 change: the run's branch becomes one squashed commit on the target
 * branch, with the trailer `Loopwright-Effect: <key>`. Before acting it looks for that trailer on
 * the target, so a retried activity, a worker killed after committing, or a second approval
 * finds the commit and does nothing again. The commit is made by plumbing from the verified
 * tree (`merge-tree` when the target moved, `commit-tree` as Loopwright, unsigned) and the target
 * moves by compare-and-swap (`update-ref`); nothing of the repository's (hooks, drivers,
 * signing programs) runs. When the target is the branch checked out in the repository, its
 * working tree must be clean and updatable, and is updated after the ref moves (`read-tree -m
 * -u`); a retry after a crash in between finishes that update. A conflict or a checkout that
 * cannot be updated is a non-retryable `EffectError`, with nothing left half-done.
 */
export async function applyGitCommit(input: GitCommitEffectInput): Promise<GitCommitEffectResult> {
  const top = trim(await workerGit(input.repo, ['rev-parse', '--show-toplevel']));
  const checkedOut = await workerGit(top, ['symbolic-ref', '--quiet', '--short', 'HEAD']).then(trim, () => '');
  const target = input.targetBranch ?? checkedOut;
  if (!target) throw effectFailure(`repository ${top} has no branch checked out: give targetBranch`);
  const ref = `refs/heads/${target}`;
  const head = await resolveCommit(top, ref);
  if (!head) throw effectFailure(`target branch ${target} does not exist in ${top}`);
  try {
    const done = await findApplied(top, head, input.key);
    if (done) {
      if (target === checkedOut) await finishCheckout(top, done);
      return { target, commit: done, alreadyApplied: true };
    }
    const tip = await resolveCommit(top, `refs/heads/${input.branch}`);
    if (!tip) throw effectFailure(`the run's branch ${input.branch} does not exist in ${top}`);
    const tree = await squashedTree(top, target, head, input.branch, tip);
    if (tree === (await treeOf(top, head))) throw effectFailure(`could not apply ${input.branch} onto ${target}: it changes nothing there`);
    const commit = await commitTree(top, tree, [head], `${input.message.trimEnd()}\n\n${TRAILER}: ${input.key}`);
    if (target === checkedOut) await requireUpdatable(top, head, commit);
    await moveRef(top, ref, commit, head, `loopwright: ${input.key}`);
    if (target === checkedOut) await updateCheckout(top, head, commit);
    return { target, commit, alreadyApplied: false };
  } catch (err) {
    if (err instanceof CheckoutBlockedError) throw effectFailure(`cannot commit to ${target}: ${err.message}`);
    throw err;
  }
}
