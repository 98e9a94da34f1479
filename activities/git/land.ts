import { commitTree, treeOf } from './commit-tree';
import { GitError, workerGit } from './worker-git';

/**
 * Which tree an effect commits onto its target. The change a run verified is `base → verified`:
 * the run's branch forked at `base`, and the checks ran on exactly `verified`'s tree.
 *
 * - The target still at `base` (nobody moved it since the run forked): the commit gets
 *   `verified`'s tree, exactly what the checks verified.
 * - The target moved (a teammate's commit, another run's effect) or is another branch: the change
 *   is applied onto it by a real 3-way merge with `base` as the merge base, as `git cherry-pick`
 *   would (objects only: `merge-tree --write-tree`, no working tree, no merge driver of the
 *   repository). That is what this effect has promised since it first merged (README: "a
 *   conflict ... ends the run blocked"), and what a person who approved "apply the fix to main"
 *   expects when main gained an unrelated commit meanwhile. A conflict is refused, naming the
 *   files, with nothing written. The merged tree itself was not verified by the checks; the run
 *   record's `commit` and the trailer say which run it came from, for the audit.
 */

/** Why the change cannot be landed on the target (nothing has been changed). */
export class LandingRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** True when `ancestor` is `commit` or one of its ancestors. */
export async function isAncestor(cwd: string, ancestor: string, commit: string): Promise<boolean> {
  return workerGit(cwd, ['merge-base', '--is-ancestor', ancestor, commit]).then(
    () => true,
    (err: unknown) => {
      if (err instanceof GitError && err.exitCode === 1) return false;
      throw err;
    },
  );
}

/**
 * The tree to commit onto `head` (the target's tip) for the change `base → verified`, as
 * described above. `base` defaults to the merge base of `head` and `verified` (also when the
 * given one is not an ancestor of `verified`). Throws LandingRefusedError on a conflict or when
 * the two share no history; `what` names the change and the target in those messages.
 */
export async function landingTree(
  top: string,
  what: { change: string; target: string },
  head: string,
  verified: string,
  given?: string,
): Promise<string> {
  const base =
    given && (await isAncestor(top, given, verified))
      ? given
      : await workerGit(top, ['merge-base', head, verified]).then(
          (out) => out.trim(),
          () => '',
        );
  if (!base) throw new LandingRefusedError(`could not apply ${what.change} onto ${what.target}: they share no history`);
  if (base === head) return treeOf(top, verified);
  // Two commits on `base` holding the target's tree and the verified tree: their only merge base
  // is `base`, so merge-tree (git 2.38+, no --merge-base before 2.40) merges with exactly that base.
  const [ours, theirs] = await Promise.all([
    commitTree(top, await treeOf(top, head), [base], 'loopwright: the target (merge side)'),
    commitTree(top, await treeOf(top, verified), [base], 'loopwright: the verified change (merge side)'),
  ]);
  try {
    const out = await workerGit(top, ['merge-tree', '--write-tree', '--no-messages', '--name-only', ours, theirs]);
    return (out.split('\n')[0] ?? '').trim();
  } catch (err) {
    if (!(err instanceof GitError) || err.exitCode !== 1) throw err;
    const files = err.stdout.split('\n').slice(1).filter(Boolean);
    throw new LandingRefusedError(
      `could not apply ${what.change} onto ${what.target}: it conflicts with ${what.target} in ${files.slice(0, 10).join(', ') || 'some files'}`,
    );
  }
}
