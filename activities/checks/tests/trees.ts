import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { commitTree } from '../../git/commit-tree';
import { heldToDiskReserve } from '../../git/disk-reserve';
import { objectScopeAt } from '../../git/object-scope';
import { workerGit } from '../../git/worker-git';
import { markOwner, sweepLeftBehind } from '../../../server/left-behind';

/**
 * The trees the gate tests, made from git objects only (a temporary index, `update-index`,
 * `write-tree`), and clean checkouts of them: nothing the agent left in its worktree (ignored
 * files, untracked caches, a planted `.npmrc`) is in a checkout, only what the tree holds.
 */

/** One file of a tree (`ls-tree -r`). */
export interface TreeEntry {
  mode: string;
  oid: string;
}

const LISTING_MAX = 256 * 1024 * 1024;

/** Every file of `tree` (recursively), path → mode and blob. Submodules (gitlinks) are listed too. */
export async function listTree(repo: string, tree: string): Promise<Map<string, TreeEntry>> {
  const out = await workerGit(repo, ['ls-tree', '-r', '-z', '--full-tree', tree], { maxBuffer: LISTING_MAX });
  const files = new Map<string, TreeEntry>();
  for (const record of out.split('\0')) {
    const m = /^(\d+) \w+ ([0-9a-f]+)\t([\s\S]+)$/.exec(record);
    if (m) {
      const [, mode, oid, file] = m; // the pattern requires all three
      if (!mode || !oid || !file) throw new Error(`ls-tree record without mode, oid and path: ${record}`);
      files.set(file, { mode, oid });
    }
  }
  return files;
}

/**
 * `start` with some paths replaced: each entry of `set` is written (a path mapped to null is
 * removed). Returns the new tree's id; the repository's own index is not touched.
 */
export async function editTree(repo: string, start: string, set: Map<string, TreeEntry | null>): Promise<string> {
  if (set.size === 0) return start;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'loopwright-tree-'));
  const indexFile = path.join(dir, 'index');
  try {
    await workerGit(repo, ['read-tree', start], { indexFile });
    const zero = '0'.repeat(40);
    const lines = [...set].map(([file, e]) => (e ? `${e.mode} ${e.oid}\t${file}` : `0 ${zero}\t${file}`));
    await workerGit(repo, ['update-index', '-z', '--index-info'], { indexFile, input: `${lines.join('\0')}\0` });
    return (await workerGit(repo, ['write-tree'], { indexFile })).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A clean checkout of a tree, in a folder of its own, removed by `remove()`. */
export interface Checkout {
  dir: string;
  remove(): Promise<void>;
}

/**
 * Checks `tree` out into a fresh detached worktree of the repository (so git works in it as it
 * did for the agent, with the repository's `.git` read-only in the sandbox), made from a commit
 * object with `parent` that no ref points to. Inside `withPrivateObjects(repo)` (the gate's
 * case, see git/private-objects.ts) it is a worktree of that private repository instead, which
 * holds the commit and borrows the repository's objects: the sandbox mounts the private `.git`
 * and the stores it borrows, read-only, and none of the repository's refs or worktrees.
 * `remove()` removes the worktree and its folder.
 */
export async function checkOutTree(
  repo: string,
  tree: string,
  parent: string,
  under: string,
  label: string,
): Promise<Checkout> {
  await mkdir(under, { recursive: true, mode: 0o700 });
  // Checkouts a killed worker left, in any run's folder beside this one (server/left-behind.ts).
  sweepLeftCheckouts(path.dirname(under));
  const holder = await mkdtemp(path.join(under, `${label}-`));
  markOwner(path.join(holder, OWNER_FILE));
  const dir = path.join(holder, 'checkout');
  const commit = await commitTree(repo, tree, [parent], `loopwright: ${label} checkout for the tests check`);
  const owner = objectScopeAt(repo)?.repository ?? repo;
  const remove = async () => {
    await workerGit(owner, ['worktree', 'remove', '--force', dir]).catch(() => undefined);
    await rm(path.dirname(dir), { recursive: true, force: true });
    await workerGit(owner, ['worktree', 'prune']).catch(() => undefined);
  };
  try {
    await workerGit(owner, ['worktree', 'add', '--detach', '--no-checkout', dir, commit]);
    // Files are written by read-tree in the new worktree itself (its own config's drivers are the ones neutralized).
    // Held to the disk reserve: the tree holds what the agent's commands left, which may be up to
    // what the disk had free above the reserve, and this writes all of it out again.
    await heldToDiskReserve(dir, `the ${label} checkout for the tests check was not written`, (signal) =>
      workerGit(dir, ['read-tree', '--reset', '-u', 'HEAD'], { signal }),
    );
  } catch (err) {
    await remove();
    throw err;
  }
  return { dir, remove };
}

/** Where a checkout's folder names the worker process that made it, beside the checkout itself. */
const OWNER_FILE = 'owner';

/**
 * Removes the checkouts (`<runs>/<run>/<label>-*`) whose worker process is gone: a worker killed
 * during a gate leaves whole checkouts of the repository, and the run's retry may land on
 * another machine. A run's own folder is left (a gate starting now may be about to use it).
 */
function sweepLeftCheckouts(runs: string): void {
  let names: string[];
  try {
    names = readdirSync(runs);
  } catch {
    return;
  }
  for (const run of names) sweepLeftBehind(path.join(runs, run), '', (d) => path.join(d, OWNER_FILE));
}
