import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { lstat } from 'node:fs/promises';
import { nestedRepositoryProblem } from './nested-repos';
import { repositoryDirs, workerGit } from './worker-git';

/** Listings of every path of a large repository fit. */
const MAX_LISTING = 256 * 1024 * 1024;

const paths = (out: string) => out.split('\0').filter(Boolean);

/**
 * Writes the working state under `root` as a tree object and returns its id: the tree of `from`
 * (default HEAD; the empty tree when it does not resolve) with every tracked path under `root`
 * as it is on disk (changed, deleted, type changed) and every untracked, not ignored file added,
 * as `git add -A` would stage it. The diff policy checks this tree, and the per-attempt commit
 * is made from it, so what is verified is what is committed.
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
    // Tracked paths first, so a file that became a folder is removed before the folder's files
    // are added; an embedded repository is listed as `dir/` and added as a gitlink, as add -A does.
    const tracked = paths(
      await workerGit(root, ['ls-files', '-z', '--cached', '--', '.'], { indexFile, maxBuffer: MAX_LISTING }),
    );
    const untracked = paths(
      await workerGit(root, ['ls-files', '-z', '--others', '--exclude-standard', '--', '.'], {
        indexFile,
        maxBuffer: MAX_LISTING,
      }),
    ).map((p) => p.replace(/\/$/, ''));
    const all = await withoutUnsafeRepositories(root, [...tracked, ...untracked]);
    if (all.length > 0)
      await workerGit(root, ['update-index', '-z', '--add', '--remove', '--replace', '--stdin'], {
        indexFile,
        input: `${all.join('\0')}\0`,
      });
    return (await workerGit(root, ['write-tree'], { indexFile })).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `paths` (relative to `root`) without the folders holding a nested repository that git must not
 * look into (nested-repos.ts): `update-index` would resolve its HEAD, following whatever symlink
 * the agent left among its refs. Such a repository is left as the base tree has it: a gitlink
 * there stays as it was, an untracked one is not added.
 */
async function withoutUnsafeRepositories(root: string, paths: string[]): Promise<string[]> {
  let repo: Awaited<ReturnType<typeof repositoryDirs>> | null = null;
  const kept: string[] = [];
  for (const p of paths) {
    const abs = path.join(root, p);
    if ((await lstat(abs).catch(() => undefined))?.isDirectory()) {
      repo ??= (await repositoryDirs(root)) ?? { top: root, gitDirs: [] };
      if (await nestedRepositoryProblem(repo.top, abs, repo.gitDirs)) continue;
    }
    kept.push(p);
  }
  return kept;
}
