import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { workerProtectedPaths } from '../sandbox/protected';
import { realOrSelf } from '../sandbox/real-path';
import { refuseAmplifiedTree } from './amplification';
import { heldToDiskReserve } from './disk-reserve';
import { unsafeNestedRepositories } from './nested-repos';
import { objectScopeAt } from './object-scope';
import { repositoryDirs, workerGit } from './worker-git';

/** Listings of every path of a large repository fit. */
const MAX_LISTING = 256 * 1024 * 1024;

const paths = (out: string) => out.split('\0').filter(Boolean);

/**
 * Writes the working state under `root` as a tree object and returns its id: the tree of `from`
 * (default HEAD; the empty tree when it does not resolve) with every tracked path under `root`
 * as it is on disk (changed, deleted, type changed) and every untracked, not ignored file added,
 * as `git add -A` would stage it. The diff policy checks this tree, and the per-attempt commit
 * is made from it, so what is verified is what is committed. Its objects go to the repository's
 * store, or inside `withPrivateObjects(root)` (private-objects.ts) to that private store: the
 * checks snapshot that way, so a run in place writes nothing into the target's store.
 *
 * It works in a temporary index, so the repository's own index is untouched, that starts without
 * stat data, so every file is hashed from its content (a newer mtime cannot hide a racily-clean
 * edit). It uses plumbing (`ls-files`, then `update-index --add --remove --replace`) instead of
 * `git add -A`, which asks every checked-out submodule whether it is dirty by running git inside
 * that submodule's own repository, whose filters and hooks this process cannot see to neutralize.
 */
export async function snapshotWorkingTree(root: string, from = 'HEAD'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'loopwright-snapshot-'));
  const indexFile = path.join(dir, 'index');
  try {
    const start = await workerGit(root, ['rev-parse', '--verify', '--quiet', `${from}^{commit}`]).then(
      (out) => out.trim(),
      () => '',
    );
    await workerGit(root, start ? ['read-tree', start] : ['read-tree', '--empty'], { indexFile });
    // A nested repository git must not look into (nested-repos.ts) is left out of every listing
    // (an exclude pathspec: git does not even visit it) and stays as the base tree has it.
    const repo = await repositoryDirs(root);
    const unsafe = repo ? await unsafeNestedRepositories(repo.top, repo.gitDirs) : [];
    // So is every path of the worker's own that the sandbox masks inside the working tree
    // (LOOPWRIGHT_HOME, a key file the environment names): written into the repository as an
    // object, it would be read by the next command (every object is readable there), and by the
    // gate's test run in a checkout of the tree.
    const own = repo ? protectedInside(repo.top, root) : [];
    const excluded = [...unsafe.map((u) => u.path), ...own].map((p) => `:(exclude,top,literal)${p}`);
    const outside = (p: string) =>
      !repo || !unsafe.some((u) => isWithin(u.path, path.relative(repo.top, path.join(root, p))));
    // Tracked paths first, so a file that became a folder is removed before the folder's files
    // are added; an embedded repository is listed as `dir/` and added as a gitlink, as add -A does.
    const tracked = paths(
      await workerGit(root, ['ls-files', '-z', '--cached', '--', '.', ...excluded], {
        indexFile,
        maxBuffer: MAX_LISTING,
      }),
    );
    const untracked = paths(
      await workerGit(root, ['ls-files', '-z', '--others', '--exclude-standard', '--', '.', ...excluded], {
        indexFile,
        maxBuffer: MAX_LISTING,
        nestedExcluded: true,
      }),
    ).map((p) => p.replace(/\/$/, ''));
    const all = [...tracked, ...untracked].filter(outside);
    // Before any byte is hashed: files that claim far more than the disk they hold (sparse, hard
    // linked) would cost the worker's CPU here and the disk in every checkout of the tree.
    await refuseAmplifiedTree(root, all);
    if (all.length > 0) {
      // Hashing what the agent's commands wrote copies it into an object store (the repository's,
      // or a check's private one, see private-objects.ts): watched as those commands are
      // (LOOPWRIGHT_SANDBOX_DISK_FREE), or files that filled the disk up to the commands' limit
      // would fill the rest of it here.
      const store = objectScopeAt(root)?.objects ?? root;
      await heldToDiskReserve(store, `the working tree under ${root} was not snapshotted`, (signal) =>
        workerGit(root, ['update-index', '-z', '--add', '--remove', '--replace', '--stdin'], {
          indexFile,
          input: `${all.join('\0')}\0`,
          signal,
        }),
      );
    }
    return (await workerGit(root, ['write-tree'], { indexFile })).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The paths of {@link workerProtectedPaths} in the working tree at `top`, relative to it: those
 * that lie inside it without holding `root` (an L2 worktree lies in LOOPWRIGHT_HOME).
 */
function protectedInside(top: string, root: string): string[] {
  const realTop = realOrSelf(top);
  const realRoot = realOrSelf(root);
  return workerProtectedPaths()
    .filter((p) => p !== realTop && isWithin(realTop, p) && !isWithin(p, realRoot))
    .map((p) => path.relative(realTop, p));
}

function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
