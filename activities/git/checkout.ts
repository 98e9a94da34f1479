import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GitError, workerGit, type WorkerGitOptions } from './worker-git';

/**
 * The checkout of a target branch: the worktree (the repository's own or a linked one) that has
 * the branch checked out. The effect moves the branch first (one compare-and-swap, the commit
 * point), then brings that worktree's index and files along with `read-tree -m -u parent commit`,
 * which writes files first and the index last, in one rename: the index is never half-staged.
 * Every step here can be repeated by a retry, and none overwrites anyone's work.
 */

/** Why the checkout cannot be updated, for the caller to report (nothing has been changed). */
export class CheckoutBlockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** What became of a checkout after its branch moved to the effect's commit. */
export interface CheckoutOutcome {
  /** The worktree that has the target checked out. */
  path: string;
  /**
   * `updated`: its index and files hold the effect's commit; `left`: left exactly as it was,
   * `note` says why and what to do; `moved_on`: the branch has moved past the effect's commit
   * since, and the checkout is whoever moved it's business.
   */
  state: 'updated' | 'left' | 'moved_on';
  note?: string;
}

/**
 * The worktree that has `ref` checked out (`git worktree list`), or undefined. A worktree whose
 * folder is gone (prunable) does not count.
 */
export async function checkoutOf(top: string, ref: string): Promise<string | undefined> {
  const out = await workerGit(top, ['worktree', 'list', '--porcelain', '-z']);
  for (const entry of out.split('\0\0')) {
    const lines = entry.split('\0').filter(Boolean);
    const dir = lines.find((l) => l.startsWith('worktree '))?.slice('worktree '.length);
    if (dir && lines.includes(`branch ${ref}`) && !lines.some((l) => l === 'bare' || l.startsWith('prunable')))
      return dir;
  }
  return undefined;
}

/**
 * Throws CheckoutBlockedError when the checkout at `dir` has uncommitted changes to tracked
 * files, or when updating it from `parent` to `tree` would fail (an untracked file in the way):
 * checked before anything is written, so a refusal leaves everything as it was. A held index
 * lock throws the GitError, which an activity retries. `env` names where `tree`'s objects are
 * read when the repository does not have them yet (a landing's scratch store, see land.ts): the
 * effect asks before it copies a change's objects into the repository.
 */
export async function requireUpdatable(
  dir: string,
  parent: string,
  tree: string,
  env: Record<string, string> = {},
): Promise<void> {
  const dirty = await workerGit(dir, ['status', '--porcelain', '--untracked-files=no', '--ignore-submodules=dirty']);
  if (dirty.trim())
    throw new CheckoutBlockedError(
      `the working tree of ${dir} has uncommitted changes (${(dirty.trim().split('\n')[0] ?? '').trim()} …)`,
    );
  await workerGit(dir, ['read-tree', '-n', '-m', '-u', parent, tree], { env }).catch((err: unknown) => {
    // A held index lock is git running there now (another effect's update or status, say), not
    // someone's work in the way: thrown as it is, for the activity's retry.
    if (err instanceof GitError && /index\.lock/.test(err.stderr)) throw err;
    throw new CheckoutBlockedError(
      `its checkout at ${dir} cannot be updated: ${err instanceof GitError ? err.reason : String(err)}`,
    );
  });
}

/**
 * Brings the checkout at `dir`, whose branch now points at `commit`, from `parent` (the commit's
 * first parent) to `commit`; the first update and every retry's repair alike. When its index
 * already holds `commit`, it is done. When the index holds `parent`, `read-tree -m -u` updates
 * index and files, keeping local changes to paths the commit does not touch. When that fails
 * because an earlier try was killed while writing files, the files it wrote hold `commit`'s
 * content: they are accepted and the update finished with `read-tree --reset -u`. Anything else
 * (a local change to a path the commit changes, an index holding other work, a HEAD elsewhere)
 * is someone's work: the checkout is left exactly as it was and the outcome says so. A held
 * index lock (git running there now) throws, for the activity's retry. `signal` kills its git
 * commands (default: the activity's cancellation).
 */
export async function settleCheckout(
  dir: string,
  parent: string,
  commit: string,
  signal?: AbortSignal,
): Promise<CheckoutOutcome> {
  const opts = signal ? { signal } : {};
  const head = await workerGit(dir, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], opts).then(
    (out) => out.trim() || undefined,
    (err: unknown) => {
      if (err instanceof GitError && err.exitCode === 1) return undefined;
      throw err;
    },
  );
  if (head !== commit)
    return {
      path: dir,
      state: 'moved_on',
      note: `the checkout at ${dir} is at ${head?.slice(0, 12) ?? 'no commit'} now, no longer at the effect's commit: left as it is`,
    };
  if (await indexHolds(dir, commit, opts)) return { path: dir, state: 'updated' };
  const finishByHand = `finish it by hand with \`git read-tree -m -u ${parent} ${commit}\` there once those changes are out of the way`;
  if (!(await indexHolds(dir, parent, opts))) {
    return {
      path: dir,
      state: 'left',
      note: `the index of ${dir} holds staged changes that are neither ${parent.slice(0, 12)} nor the effect's commit: left as it was, so \`git status\` there shows the commit's changes reversed; ${finishByHand}`,
    };
  }
  try {
    await workerGit(dir, ['read-tree', '-m', '-u', parent, commit], opts);
    return { path: dir, state: 'updated' };
  } catch (err) {
    if (err instanceof GitError && /index\.lock/.test(err.stderr)) throw err;
    // files a killed update wrote count as local changes: look at each
  }
  const changed = new Set(
    nulSplit(await workerGit(dir, ['diff-tree', '-r', '-z', '--name-only', '--no-renames', parent, commit], opts)),
  );
  const sinceParent = await worktreeChanges(dir, undefined, opts);
  const sinceCommit = await worktreeChanges(dir, commit, opts);
  const strays = [...sinceParent]
    .filter(([file, xy]) => (changed.has(file) ? sinceCommit.has(file) : xy !== '??'))
    .map(([file]) => file);
  if (strays.length > 0) {
    return {
      path: dir,
      state: 'left',
      note: `the checkout at ${dir} has local changes to ${strays.slice(0, 10).join(', ')}: its index and files were left at ${parent.slice(0, 12)}, so \`git status\` there shows the commit's changes reversed; ${finishByHand}`,
    };
  }
  await workerGit(dir, ['read-tree', '--reset', '-u', commit], opts);
  return { path: dir, state: 'updated' };
}

/** True when the index at `dir` holds exactly `commit`'s tree. */
async function indexHolds(dir: string, commit: string, opts: WorkerGitOptions = {}): Promise<boolean> {
  return workerGit(dir, ['diff-index', '--cached', '--quiet', '--ignore-submodules=dirty', commit, '--'], opts).then(
    () => true,
    (err: unknown) => {
      if (err instanceof GitError && err.exitCode === 1) return false;
      throw err;
    },
  );
}

/**
 * Paths whose file differs from the index (`XY` status codes, `??` untracked): the real index,
 * or, given `commit`, a temporary index holding `commit`'s tree (so: differs from `commit`).
 */
async function worktreeChanges(
  dir: string,
  commit?: string,
  opts: WorkerGitOptions = {},
): Promise<Map<string, string>> {
  const tmp = commit ? await mkdtemp(path.join(os.tmpdir(), 'loopwright-checkout-')) : undefined;
  const indexFile = tmp ? path.join(tmp, 'index') : undefined;
  try {
    if (commit) await workerGit(dir, ['read-tree', commit], { ...opts, indexFile });
    const out = await workerGit(
      dir,
      ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=dirty'],
      { ...opts, indexFile },
    );
    const changes = new Map<string, string>();
    for (const entry of nulSplit(out)) {
      const xy = entry.slice(0, 2);
      if (xy === '??' || xy[1] !== ' ') changes.set(entry.slice(3), xy);
    }
    return changes;
  } finally {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }
}

function nulSplit(out: string): string[] {
  return out.split('\0').filter(Boolean);
}
