import { AsyncLocalStorage } from 'node:async_hooks';
import path from 'node:path';
import { realOrSelf } from '../sandbox/real-path';

/**
 * Where the worker's git reads and writes objects for one repository while a piece of work runs
 * ({@link inObjectScope}): a private store of the worker's that borrows the repository's objects
 * (see private-objects.ts). workerGit applies it to every command whose working directory is the
 * scope's root, so every reader of what was written there finds it without being told.
 */
export interface ObjectScope {
  /** The folder the scope is for (a workspace root), as given and as its real path. */
  root: string;
  realRoot: string;
  /** The private repository (a work tree with its `.git`) whose object store holds what is written. */
  repository: string;
  /** That repository's object store: `GIT_OBJECT_DIRECTORY` of the commands in `root`. */
  objects: string;
  /**
   * The stores it borrows (the repository's, and what that one borrows in turn), as real paths:
   * every git command of the worker while the scope is in force runs with them read-only
   * (read-only-stores.ts), so git cannot even freshen their objects' mtimes.
   */
  borrowed: string[];
}

const storage = new AsyncLocalStorage<readonly ObjectScope[]>();

/** Runs `fn` with `scope` in force (beside the scopes already in force) for everything it awaits. */
export function inObjectScope<T>(scope: ObjectScope, fn: () => Promise<T>): Promise<T> {
  return storage.run([...(storage.getStore() ?? []), scope], fn);
}

/** The scope in force for the worker's git working at `cwd`, if any (only `cwd` being the scope's root counts). */
export function objectScopeAt(cwd: string): ObjectScope | undefined {
  const scopes = storage.getStore();
  if (!scopes?.length) return undefined;
  const at = path.resolve(cwd);
  const latest = [...scopes].reverse();
  const named = latest.find((s) => s.root === at || s.realRoot === at);
  if (named) return named;
  const real = realOrSelf(at);
  return latest.find((s) => s.realRoot === real);
}

/** The stores every scope in force borrows (empty outside any scope): read-only to the worker's git. */
export function borrowedStores(): string[] {
  return [...new Set((storage.getStore() ?? []).flatMap((s) => s.borrowed))];
}
