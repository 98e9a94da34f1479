import { lstatSync, realpathSync } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { workerProtectedPaths } from '../sandbox/protected';
import { ToolError } from './types';

/** Options of {@link resolveInside}. */
export interface ResolveOptions {
  /** The path will be written: refuse anything inside `.git/`. */
  forWrite?: boolean;
  /**
   * The worker's own paths, refused when the path leads into one that does not hold the root
   * (LOOPWRIGHT_HOME inside the workspace, say): default {@link workerProtectedPaths}, the
   * paths the sandbox masks, so the file tools reach no more than the agent's commands do.
   */
  protectedPaths?: string[];
}

function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

/** True when `target` lies in one of `paths` that does not hold `root` (see ResolveOptions.protectedPaths). */
export function isProtected(root: string, target: string, paths: string[]): boolean {
  return paths.some((p) => !isInside(p, root) && isInside(p, target));
}

function touchesGit(root: string, target: string): boolean {
  // Case-insensitive: on macOS `.GIT/config` is the same file as `.git/config`.
  return path
    .relative(root, target)
    .split(path.sep)
    .some((part) => part.toLowerCase() === '.git');
}

function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * What the rules need to ask the filesystem: the realpath of a path (throws as realpath
 * does), or whether a path is a symlink (false when it cannot be lstat'ed).
 */
type Probe = { op: 'realpath'; path: string } | { op: 'isSymlink'; path: string };

/**
 * The rules of {@link resolveInside}, written once: a generator that yields each filesystem
 * question and gets its answer back (or the error thrown into it), so a sync and an async
 * driver share exactly the same semantics.
 */
function* resolveSteps(
  root: string,
  relPath: string,
  opts: ResolveOptions,
): Generator<Probe, string, string | boolean> {
  if (relPath.includes('\0')) throw new ToolError(`path ${JSON.stringify(relPath)} contains a NUL byte`);
  if (path.isAbsolute(relPath)) {
    throw new ToolError(`path ${relPath} is absolute: give a path relative to the workspace root`);
  }
  let realRoot: string;
  try {
    realRoot = (yield { op: 'realpath', path: root }) as string;
  } catch (err) {
    throw new Error(`the workspace root ${root} cannot be resolved (${errCode(err) ?? 'error'})`, { cause: err });
  }
  const shown = relPath === '' ? '.' : relPath;
  const lexical = path.resolve(realRoot, relPath);
  if (!isInside(realRoot, lexical)) throw new ToolError(`path ${shown} leaves the workspace`);
  if (opts.forWrite && touchesGit(realRoot, lexical)) {
    throw new ToolError(`path ${shown} is inside .git/: writing there is refused`);
  }

  // Walk up to the deepest ancestor that exists and take its realpath; the rest does not
  // exist yet, so it cannot hold a symlink.
  let existing = lexical;
  const rest: string[] = [];
  for (;;) {
    try {
      existing = (yield { op: 'realpath', path: existing }) as string;
      break;
    } catch (err) {
      if (errCode(err) !== 'ENOENT' && errCode(err) !== 'ENOTDIR') throw err;
      if ((yield { op: 'isSymlink', path: existing }) as boolean)
        throw new ToolError(`path ${shown} goes through a dangling symlink`);
      rest.unshift(path.basename(existing));
      const parent = path.dirname(existing);
      if (parent === existing) throw new ToolError(`path ${shown} cannot be resolved`);
      existing = parent;
    }
  }
  const real = path.join(existing, ...rest);
  if (!isInside(realRoot, real)) throw new ToolError(`path ${shown} points outside the workspace`);
  if (opts.forWrite && touchesGit(realRoot, real)) {
    throw new ToolError(`path ${shown} leads into .git/: writing there is refused`);
  }
  if (isProtected(realRoot, real, opts.protectedPaths ?? workerProtectedPaths())) {
    throw new ToolError(`path ${shown} is inside the worker's own files (its home, keys or transcripts): refused`);
  }
  return real;
}

/**
 * The real, absolute path of `relPath` inside the workspace `root`, or a ToolError that says
 * why not. Refused: NUL bytes, absolute paths, paths whose normalized form leaves the root
 * (`../x`, `a/../../x`), symlinks whose target leads outside (the realpath of the deepest
 * existing ancestor, and of the file itself when it exists, must stay inside the realpath of
 * the root), dangling symlinks, and, with `forWrite`, anything inside `.git/`.
 * The check is made at call time: a file swapped for a symlink afterwards is not caught
 * (the file tools open what it returns with O_NOFOLLOW, so the last component cannot be).
 * Synchronous: the tools use {@link resolveInsideAsync}, which keeps the worker's thread free.
 */
export function resolveInside(root: string, relPath: string, opts: ResolveOptions = {}): string {
  const steps = resolveSteps(root, relPath, opts);
  let step = steps.next();
  while (!step.done) {
    const probe = step.value;
    let answer: string | boolean;
    try {
      answer = probe.op === 'realpath' ? realpathSync(probe.path) : isSymlinkSync(probe.path);
    } catch (err) {
      step = steps.throw(err);
      continue;
    }
    step = steps.next(answer);
  }
  return step.value;
}

/** {@link resolveInside} with the same rules, on async fs calls (nothing blocks the event loop). */
export async function resolveInsideAsync(root: string, relPath: string, opts: ResolveOptions = {}): Promise<string> {
  const steps = resolveSteps(root, relPath, opts);
  let step = steps.next();
  while (!step.done) {
    const probe = step.value;
    let answer: string | boolean;
    try {
      answer = probe.op === 'realpath' ? await realpath(probe.path) : await isSymlink(probe.path);
    } catch (err) {
      step = steps.throw(err);
      continue;
    }
    step = steps.next(answer);
  }
  return step.value;
}

function isSymlinkSync(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

async function isSymlink(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** `abs` as the model should see it: relative to the (real) root, `.` for the root itself. */
export function relativeTo(root: string, abs: string): string {
  return path.relative(realpathSync(root), abs) || '.';
}
