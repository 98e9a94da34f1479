import { LOOPWRIGHT_IDENTITY } from './git-env';
import { workerGit } from './worker-git';

/**
 * Plumbing the worker commits with: nothing here runs a hook, an editor or a signing program,
 * and no commit reads the repository's identity (author and committer are Loopwright).
 */

/** The commit `rev` resolves to, or undefined when it does not resolve to one. */
export async function resolveCommit(cwd: string, rev: string): Promise<string | undefined> {
  const out = await workerGit(cwd, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => '');
  return out.trim() || undefined;
}

/**
 * Where objects are read and written, when not the repository's own store (`GIT_OBJECT_DIRECTORY`,
 * `GIT_ALTERNATE_OBJECT_DIRECTORIES`: a landing's scratch store, see land.ts).
 */
export type ObjectEnv = Record<string, string>;

/** The tree of a commit. */
export async function treeOf(cwd: string, commit: string, env: ObjectEnv = {}): Promise<string> {
  return (await workerGit(cwd, ['rev-parse', '--verify', `${commit}^{tree}`], { env })).trim();
}

/** The message of a commit, as stored (`cat-file`, so no log configuration applies). */
export async function messageOf(cwd: string, commit: string): Promise<string> {
  const raw = await workerGit(cwd, ['cat-file', 'commit', commit]);
  const body = raw.indexOf('\n\n');
  return body < 0 ? '' : raw.slice(body + 2);
}

/** `git commit-tree` of `tree` with `parents` and `message`, unsigned, by Loopwright; written where `env` says. */
export async function commitTree(
  cwd: string,
  tree: string,
  parents: string[],
  message: string,
  env: ObjectEnv = {},
): Promise<string> {
  const args = ['commit-tree', '--no-gpg-sign', ...parents.flatMap((p) => ['-p', p]), '-F', '-', tree];
  return (
    await workerGit(cwd, args, { env: { ...LOOPWRIGHT_IDENTITY, ...env }, input: `${message.trimEnd()}\n` })
  ).trim();
}

/**
 * Moves `ref` from `expected` to `next` (`update-ref` compare-and-swap): fails, changing
 * nothing, when someone moved the ref in between. `reason` goes to the reflog.
 */
export async function moveRef(cwd: string, ref: string, next: string, expected: string, reason: string): Promise<void> {
  await workerGit(cwd, ['update-ref', '-m', reason, ref, next, expected], { env: { ...LOOPWRIGHT_IDENTITY } });
}
