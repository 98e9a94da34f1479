import { type ApplicationFailure } from '@temporalio/common';
import { FailureType, nonRetryableFailure } from '../common/failure-types';
import {
  CheckoutBlockedError,
  checkoutOf,
  requireUpdatable,
  settleCheckout,
  type CheckoutOutcome,
} from './git/checkout';
import { commitTree, moveRef, resolveCommit, treeOf } from './git/commit-tree';
import { bringObjects, landingObjects, landingTree, LandingRefusedError } from './git/land';
import { workerGit } from './git/worker-git';
import { ownRepository, runRoot } from './agent/workspace';
import { pauseForTest } from './test-pause';

const TRAILER = 'Loopwright-Effect';

export interface GitCommitEffectInput {
  /** `<workflow id>/<effect name>/<sequence>`: the same for every retry and every approval. */
  key: string;
  /** The repository the run worked on (its workspace): the target's. */
  repo: string;
  /** The run's branch with the verified change. */
  branch: string;
  targetBranch?: string;
  message: string;
  /**
   * The commit whose tree the checks verified (the passing attempt's commit, from the run's
   * record); absent in activities scheduled before it was passed, which use the branch's tip.
   */
  verified?: string;
  /** The commit the run's branch forked from (the change is `base → verified`); default: the merge base. */
  base?: string;
}

export interface GitCommitEffectResult {
  target: string;
  commit: string;
  alreadyApplied: boolean;
  /** When the target is checked out in a worktree: whether it was brought to `commit` (see git/checkout.ts). */
  checkout?: CheckoutOutcome;
}

const effectFailure = (message: string): ApplicationFailure => nonRetryableFailure(FailureType.Effect, message);

const trim = (out: string) => out.trim();

/** The commit in `head`'s history that carries the effect's trailer, if any: the ledger is git history. */
async function findApplied(top: string, head: string, key: string): Promise<string | undefined> {
  const format = `--format=%H%x1f%(trailers:key=${TRAILER},valueonly)%x1e`;
  const log = await workerGit(top, ['log', '--fixed-strings', `--grep=${TRAILER}: ${key}`, format, head, '--']);
  for (const entry of log.split('\x1e')) {
    const [sha, value] = entry.trim().split('\x1f');
    if (sha && value?.split('\n').some((v) => v.trim() === key)) return sha;
  }
  return undefined;
}

/**
 * Applies a verified L2/L3 change as ONE atomic ref update: the verified tree (the passing
 * attempt's commit, merged 3-way onto the target only when the target moved since the run
 * forked, see git/land.ts) becomes one commit made by plumbing (`commit-tree` as Loopwright,
 * unsigned, with the trailer `Loopwright-Effect: <key>`), and the target moves to it by
 * compare-and-swap (`update-ref <ref> <new> <old>`). Nothing of the repository's runs (hooks,
 * drivers, signing programs: see git/worker-git.ts).
 *
 * The run's commits are in its own repository (`worktreesDir`'s folder of its branch, see
 * agent/workspace.ts), not the target's: the tree to land is made in a scratch store that
 * borrows both, and only then are the objects of that tree the target lacks copied into the
 * target's store (git/land.ts), so nothing of a run reaches the repository other runs read until it lands. A
 * run started before runs had their own repository (a linked worktree) has its commits in the
 * target already.
 *
 * Crash-safe at every step, so a retry (a killed worker, a lost heartbeat, a second approval)
 * causes it once: it first looks for its key on the target's history, and finds its own commit
 * when the ref moved before the crash. A crash before the ref moves leaves no change (at most an
 * unreferenced object); after, exactly one commit. A concurrent effect that moves the target
 * first makes the compare-and-swap fail with nothing changed: when it was this same effect, its
 * commit is found and used, else the activity is retried onto the new tip.
 *
 * When the target is checked out (in the repository or a linked worktree), that checkout must
 * be clean and updatable before anything is written, the change's objects included (else a
 * non-retryable `EffectError`: moving a branch under someone's uncommitted work would make their
 * next commit undo the fix; a change that never lands stays out of the store later runs read).
 * After the ref moves, the checkout is brought along by `read-tree -m -u`, by this try or a retry's repair
 * (git/checkout.ts). If someone's work got in between, the checkout is left untouched and the
 * result's `checkout` says so: the commit has landed, so that is not an error. A conflict, a
 * change that changes nothing, or a missing branch is a non-retryable `EffectError`.
 *
 * Test builds can hold it at each step (`start`, `commit-written`, `ref-moved`, `done`): see
 * test-pause.ts.
 */
export async function applyGitCommit(
  input: GitCommitEffectInput,
  worktreesDir?: string,
): Promise<GitCommitEffectResult> {
  await pauseForTest('start', input.key);
  const top = trim(await workerGit(input.repo, ['rev-parse', '--show-toplevel']));
  // Where the run's commits are: its own repository, or the target's (a run from before those, with a linked worktree).
  const from = (worktreesDir && ownRepository(runRoot(worktreesDir, input.branch))) || top;
  const target =
    input.targetBranch ?? (await workerGit(top, ['symbolic-ref', '--quiet', '--short', 'HEAD']).then(trim, () => ''));
  if (!target) throw effectFailure(`repository ${top} has no branch checked out: give targetBranch`);
  if (target === input.branch)
    throw effectFailure(`the target branch ${target} is the run's own branch: give another targetBranch`);
  const ref = `refs/heads/${target}`;
  try {
    const head = await resolveCommit(top, ref);
    if (!head) throw effectFailure(`target branch ${target} does not exist in ${top}`);
    const checkout = await checkoutOf(top, ref);
    const done = await findApplied(top, head, input.key);
    if (done) return await applied(top, { target, key: input.key, checkout }, done, true);

    const verified = await verifiedCommit(from, input).catch((err: unknown) => {
      if (from !== top || !worktreesDir) throw err;
      // Neither a run with a repository of its own here nor one with a linked worktree.
      throw effectFailure(
        `${err instanceof Error ? err.message : String(err)}: the run's repository ${runRoot(worktreesDir, input.branch)} is not on this worker (LOOPWRIGHT_WORKTREES must be shared by the workers of a run)`,
      );
    });
    // The tree to land is made in a scratch store that borrows the target's objects and the run's
    // (git/land.ts): a conflict, a change that changes nothing, or a checkout that cannot take it
    // leaves nothing of the run's in the target's store; a landing tree's objects are copied in
    // only once all of that is known, just before the commit is made.
    const objects = from === top ? undefined : await landingObjects(top, from);
    let tree: string;
    try {
      tree = await landingTree(top, { change: input.branch, target }, head, verified, input.base, objects?.env);
      if (tree === (await treeOf(top, head)))
        throw effectFailure(`could not apply ${input.branch} onto ${target}: it changes nothing there`);
      // Asked before the objects come in (the tree is read from the scratch store): a refused
      // landing never lands, and every later run's sandbox reads the target's store.
      if (checkout) await requireCheckout(checkout, { top, ref, head, target, key: input.key }, tree, objects?.env);
      if (objects) await bringObjects(top, tree, head, objects.env);
    } finally {
      await objects?.remove();
    }
    const commit = await commitTree(top, tree, [head], `${input.message.trimEnd()}\n\n${TRAILER}: ${input.key}`);
    await pauseForTest('commit-written', input.key);
    const raced = await moveRef(top, ref, commit, head, `loopwright: ${input.key}`).then(
      () => undefined,
      (err: unknown) => err,
    );
    if (raced !== undefined)
      return await afterLostRace(top, { target, key: input.key, checkout }, { head, commit }, raced);
    await pauseForTest('ref-moved', input.key);
    return await applied(top, { target, key: input.key, checkout }, commit, false, head);
  } catch (err) {
    if (err instanceof CheckoutBlockedError) throw effectFailure(`cannot commit to ${target}: ${err.message}`);
    if (err instanceof LandingRefusedError) throw effectFailure(err.message);
    throw err;
  }
}

/**
 * Throws unless the checkout of the target (at `head`) can be brought to `tree` (see
 * requireUpdatable; `env`: where `tree`'s objects are read, see land.ts). Another effect's commit
 * whose checkout update was cut short is finished first (a retry of it may be minutes away).
 */
async function requireCheckout(
  checkout: string,
  at: { top: string; ref: string; head: string; target: string; key: string },
  tree: string,
  env?: Record<string, string>,
): Promise<void> {
  await settleEarlierEffect(checkout, at.head);
  await requireUpdatable(checkout, at.head, tree, env).catch(async (err: unknown) => {
    // An effect moves the target before it brings the checkout along, so a checkout that looks
    // dirty while the target has moved since `head` was read may be that effect writing it now,
    // not someone's work: nothing was changed here, and the retry judges it on the new tip.
    if (err instanceof CheckoutBlockedError && (await resolveCommit(at.top, at.ref)) !== at.head)
      throw new Error(
        `${at.target} moved while the effect ${at.key} checked its checkout (${err.message}): nothing was changed, and the retry applies it onto the new tip`,
      );
    throw err;
  });
}

/** The effect, its target and the worktree that has the target checked out. */
interface Landing {
  target: string;
  key: string;
  checkout: string | undefined;
}

/**
 * Git commands that must not be cut short once the ref has moved (the checkout update): the
 * activity's cancellation does not kill them (their 10-minute timeout still does).
 */
const UNINTERRUPTED = new AbortController().signal;

/** The result for `commit` on the target, once the checkout (if any) is settled. */
async function applied(
  top: string,
  at: Landing,
  commit: string,
  alreadyApplied: boolean,
  knownParent?: string,
): Promise<GitCommitEffectResult> {
  const parent = knownParent ?? (at.checkout ? await resolveCommit(top, `${commit}^1`) : undefined);
  const outcome = at.checkout && parent ? await settleCheckout(at.checkout, parent, commit, UNINTERRUPTED) : undefined;
  await pauseForTest('done', at.key);
  return { target: at.target, commit, alreadyApplied, ...(outcome ? { checkout: outcome } : {}) };
}

/**
 * The compare-and-swap failed. When the target now has this effect's commit (a concurrent try
 * of the same effect won), that is the result; when the target moved otherwise, a retryable
 * error so the next try applies onto the new tip; when it did not move, the failure itself.
 */
async function afterLostRace(
  top: string,
  at: Landing,
  cas: { head: string; commit: string },
  err: unknown,
): Promise<GitCommitEffectResult> {
  const now = await resolveCommit(top, `refs/heads/${at.target}`);
  // The same commit (same tree, parent, message and second) made by a concurrent try of this effect.
  if (now === cas.commit) return applied(top, at, cas.commit, true);
  if (!now || now === cas.head) throw err;
  const done = await findApplied(top, now, at.key);
  if (done) return applied(top, at, done, true);
  throw new Error(
    `${at.target} moved from ${cas.head.slice(0, 12)} to ${now.slice(0, 12)} while the effect ${at.key} was applied: nothing was changed, and the retry applies it onto the new tip`,
  );
}

/** When `head` is an effect's commit (it carries a trailer) whose checkout was not brought along, brings it. */
async function settleEarlierEffect(checkout: string, head: string): Promise<void> {
  const [parents = '', keys] = (
    await workerGit(checkout, ['log', '-1', `--format=%P%x1f%(trailers:key=${TRAILER},valueonly)`, head, '--'])
  ).split('\x1f');
  const parent = parents.trim().split(' ')[0];
  if (parent && keys?.trim()) await settleCheckout(checkout, parent, head);
}

/** The commit whose tree the checks verified (in `top`, the run's repository): the input's, else (older activities) the run branch's tip. */
async function verifiedCommit(top: string, input: GitCommitEffectInput): Promise<string> {
  if (input.verified) {
    const commit = input.verified.startsWith('-') ? undefined : await resolveCommit(top, input.verified);
    if (!commit)
      throw effectFailure(`the verified commit ${input.verified} of ${input.branch} is not a commit in ${top}`);
    return commit;
  }
  const tip = await resolveCommit(top, `refs/heads/${input.branch}`);
  if (!tip) throw effectFailure(`the run's branch ${input.branch} does not exist in ${top}`);
  return tip;
}
