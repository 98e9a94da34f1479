import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { markOwner, sweepLeftBehind } from '../../server/left-behind';
import { commitTree, treeOf } from './commit-tree';
import { GitError, workerGit, workerGitBytes } from './worker-git';

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
export async function isAncestor(
  cwd: string,
  ancestor: string,
  commit: string,
  env: Record<string, string> = {},
): Promise<boolean> {
  return workerGit(cwd, ['merge-base', '--is-ancestor', ancestor, commit], { env }).then(
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
 * the two share no history; `what` names the change and the target in those messages. `env`
 * is where objects are read and written ({@link landingObjects}: the run's too, new ones to a
 * scratch store); it runs in the repository's working tree, so its attributes and config count
 * as they always did (every driver neutralized by workerGit), never the run's.
 */
export async function landingTree(
  top: string,
  what: { change: string; target: string },
  head: string,
  verified: string,
  given?: string,
  env: Record<string, string> = {},
): Promise<string> {
  const git = (args: string[]) => workerGit(top, args, { env });
  const base =
    given && (await isAncestor(top, given, verified, env))
      ? given
      : await git(['merge-base', head, verified]).then(
          (out) => out.trim(),
          () => '',
        );
  if (!base) throw new LandingRefusedError(`could not apply ${what.change} onto ${what.target}: they share no history`);
  if (base === head) return treeOf(top, verified, env);
  // Two commits on `base` holding the target's tree and the verified tree: their only merge base
  // is `base`, so merge-tree (git 2.38+, no --merge-base before 2.40) merges with exactly that base.
  const side = async (commit: string, message: string) =>
    commitTree(top, await treeOf(top, commit, env), [base], message, env);
  const [ours, theirs] = await Promise.all([
    side(head, 'loopwright: the target (merge side)'),
    side(verified, 'loopwright: the verified change (merge side)'),
  ]);
  try {
    const out = await git(['merge-tree', '--write-tree', '--no-messages', '--name-only', ours, theirs]);
    return (out.split('\n')[0] ?? '').trim();
  } catch (err) {
    if (!(err instanceof GitError) || err.exitCode !== 1) throw err;
    const files = err.stdout.split('\n').slice(1).filter(Boolean);
    throw new LandingRefusedError(
      `could not apply ${what.change} onto ${what.target}: it conflicts with ${what.target} in ${files.slice(0, 10).join(', ') || 'some files'}`,
    );
  }
}

/** A path as one entry of GIT_ALTERNATE_OBJECT_DIRECTORIES (`:`-separated; a quoted entry may hold one). */
function alternateEntry(dir: string): string {
  if (/["\\\n]/.test(dir)) throw new Error(`the object store ${dir} has a name git cannot take as an alternate`);
  return dir.includes(':') ? `"${dir}"` : dir;
}

/**
 * What a landing of a run with a repository of its own (agent/workspace.ts) reads and writes
 * objects through, in the target repository `top`: a scratch store of its own (a private
 * temporary folder, `GIT_OBJECT_DIRECTORY`) that borrows `top`'s objects and the run's
 * (`GIT_ALTERNATE_OBJECT_DIRECTORIES`). Everything the landing makes before it knows it lands
 * (the merge sides, a merged tree, a conflict's blobs) goes there and is removed with it: a
 * conflict or a refusal leaves nothing of the run's in the target's store, which every later
 * run's sandbox reads. `remove()` when done.
 */
export async function landingObjects(
  top: string,
  run: string,
): Promise<{ env: Record<string, string>; remove: () => Promise<void> }> {
  const store = async (cwd: string) =>
    path.join((await workerGit(cwd, ['rev-parse', '--path-format=absolute', '--git-common-dir'])).trim(), 'objects');
  const [own, theirs] = await Promise.all([store(top), store(run)]);
  // Scratch stores a killed worker left (server/left-behind.ts): each names its process.
  sweepLeftBehind(os.tmpdir(), LANDING_PREFIX, (d) => path.join(d, 'owner'));
  const scratch = await mkdtemp(path.join(os.tmpdir(), LANDING_PREFIX));
  markOwner(path.join(scratch, 'owner'));
  const objects = path.join(scratch, 'objects');
  await mkdir(objects);
  return {
    env: {
      GIT_OBJECT_DIRECTORY: objects,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: [own, theirs].map(alternateEntry).join(':'),
    },
    remove: () => rm(scratch, { recursive: true, force: true }),
  };
}

/** The landings' scratch folders in the system's temporary folder. */
const LANDING_PREFIX = 'loopwright-land-';

/** The most bytes of objects one landing copies (a pack held in memory on its way). */
const MAX_PACK_BYTES = 1024 * 1024 * 1024;

/**
 * Copies into the repository `top` the objects of `tree` that `head`'s tree does not have, read
 * through `env` ({@link landingObjects}): the objects of a change that lands, and nothing else of
 * the run's (its other attempts, snapshots, the gate's trees). By plumbing, no transport:
 * `rev-list --objects` of a commit of `tree` on `head` (made in the scratch store and left out),
 * `pack-objects` of that list, `index-pack` into `top`'s own store. Nothing of the repository
 * runs (workerGit). Idempotent: when `top` has the tree already, nothing is done; a pack is
 * written whole or not at all, so a crash leaves at most an unreferenced pack.
 */
export async function bringObjects(
  top: string,
  tree: string,
  head: string,
  env: Record<string, string>,
): Promise<void> {
  if (
    await workerGit(top, ['cat-file', '-e', tree]).then(
      () => true,
      () => false,
    )
  )
    return;
  const carrier = await commitTree(top, tree, [head], 'loopwright: a landing', env);
  const listed = await workerGit(top, ['rev-list', '--objects', carrier, '--not', head], {
    env,
    maxBuffer: 256 * 1024 * 1024,
  });
  const objects = listed.split('\n').filter((line) => line.trim() !== '' && !line.startsWith(carrier));
  if (objects.length === 0) return;
  const pack = await workerGitBytes(top, ['pack-objects', '--stdout', '-q'], {
    env,
    input: `${objects.join('\n')}\n`,
    maxBuffer: MAX_PACK_BYTES,
  });
  await workerGit(top, ['index-pack', '--stdin'], { input: pack });
}
