import type { Stats } from 'node:fs';
import { constants } from 'node:fs';
import { lstat, opendir, readdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';

/**
 * A repository nested in a working tree (a submodule's checkout, or one the agent made with
 * `git init` in a subfolder) is read by the worker's own git, outside the sandbox, whenever it
 * compares that path: to record or compare the gitlink it resolves the nested repository's HEAD,
 * reading its `HEAD`, `config`, `commondir`, `packed-refs` and loose refs, and it follows any
 * symlink among them wherever it points. A ref that is a symlink to `/proc/self/fd/1` (git's own
 * output pipe) holds git until its timeout, one to `/dev/zero` has it read without end into
 * memory that no sandbox limit binds, and a `.git` file can send it into any repository on the
 * machine. The sandbox lets a command make symlinks to anything, so before the worker's git looks
 * into a nested repository, {@link nestedRepositoryProblem} checks that what git would read there
 * is plain: regular files of sane size and folders, no symlink, no special file, nothing outside
 * the working tree (or the repository's own git directories, which commands cannot write).
 */

/** Largest `HEAD`, `config`, loose ref and the like git may read in a nested repository. */
const MAX_SMALL_FILE = 1024 * 1024;
/** Largest `packed-refs` (a real repository's can be large). */
const MAX_PACKED_REFS = 64 * 1024 * 1024;
/** Most entries looked at under a nested repository's `refs/`. */
const MAX_REF_ENTRIES = 100_000;
/** The files of a git directory that resolving its HEAD may read. */
const READ_FILES = [
  'HEAD',
  'config',
  'config.worktree',
  'commondir',
  'gitdir',
  'packed-refs',
  'objects/info/alternates',
];
/** The folders of ref files. */
const REF_FOLDERS = ['refs', 'reftable', 'worktrees'];

function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

async function lstatOrNone(p: string): Promise<Stats | undefined> {
  return lstat(p).catch(() => undefined);
}

function kind(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symlink';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Why `file` (a file git reads) is not a plain regular file of at most `max` bytes; undefined when it is, or is absent. */
async function fileProblem(file: string, shown: string, max: number): Promise<string | undefined> {
  const st = await lstatOrNone(file);
  if (!st) return undefined;
  if (st.isDirectory()) return undefined; // git reads nothing from a folder where it expects a file
  if (!st.isFile()) return `${shown} is ${kind(st)}`;
  if (st.size > max) return `${shown} is ${st.size} bytes`;
  return undefined;
}

/** Why something under the ref folder `dir` is not a plain folder or regular file; undefined when all are. */
async function refFolderProblem(dir: string, shown: string): Promise<string | undefined> {
  const st = await lstatOrNone(dir);
  if (!st) return undefined;
  if (!st.isDirectory()) return st.isFile() ? undefined : `${shown} is ${kind(st)}`;
  const stack: Array<[string, string]> = [[dir, shown]];
  let seen = 0;
  while (stack.length > 0) {
    const [abs, rel] = stack.pop() ?? [dir, shown];
    for await (const entry of await opendir(abs, { bufferSize: 256 })) {
      if (++seen > MAX_REF_ENTRIES) return `${shown} holds over ${MAX_REF_ENTRIES} entries`;
      const child = path.join(abs, entry.name);
      const childShown = `${rel}/${entry.name}`;
      if (entry.isDirectory()) stack.push([child, childShown]);
      else if (!entry.isFile()) return `${childShown} is ${kind(await lstat(child))}`;
      else if ((await lstat(child)).size > MAX_SMALL_FILE) return `${childShown} is over ${MAX_SMALL_FILE} bytes`;
    }
  }
  return undefined;
}

/**
 * Why the worker's git must not look into the repository nested at `dir` (a folder in the
 * working tree `top`, both real paths), or undefined when it may (or when `dir` holds no
 * repository: git then does not look either). `trusted` are the repository's own git
 * directories (a submodule's git directory lies in them), which no sandboxed command can write.
 */
export async function nestedRepositoryProblem(
  given: string,
  dir: string,
  trustedGiven: string[],
): Promise<string | undefined> {
  const top = await realpath(given).catch(() => given);
  const trusted = await Promise.all(trustedGiven.map((t) => realpath(t).catch(() => t)));
  const name = path.relative(top, dir) || '.';
  const dotGit = path.join(dir, '.git');
  const st = await lstatOrNone(dotGit);
  if (!st) return undefined;
  let gitDir = dotGit;
  if (st.isFile()) {
    if (st.size > 4096) return `${name}/.git is ${st.size} bytes`;
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    const m = /^gitdir: (.+)$/m.exec(await readFile(dotGit, { encoding: 'utf8', flag: flags }));
    if (!m?.[1]) return undefined; // not a gitfile: git takes the folder for no repository
    gitDir = path.resolve(dir, m[1].trim());
  } else if (!st.isDirectory()) return `${name}/.git is ${kind(st)}`;
  let real: string;
  try {
    real = await realpath(gitDir);
  } catch {
    return undefined; // nothing there: git finds no repository either
  }
  if (trusted.some((t) => isWithin(t, real))) return undefined;
  if (!isWithin(top, real)) return `${name}/.git leads to ${real}, outside the working tree`;
  const shown = path.relative(top, real) || '.';
  if ((await lstatOrNone(path.join(real, 'commondir'))) !== undefined)
    return `${shown}/commondir names another git directory (a linked worktree)`;
  for (const file of READ_FILES) {
    const problem = await fileProblem(
      path.join(real, file),
      `${shown}/${file}`,
      file === 'packed-refs' ? MAX_PACKED_REFS : MAX_SMALL_FILE,
    );
    if (problem) return problem;
  }
  for (const folder of REF_FOLDERS) {
    const problem = await refFolderProblem(path.join(real, folder), `${shown}/${folder}`).catch(
      (err: NodeJS.ErrnoException) => `${shown}/${folder} cannot be read (${err.code ?? err.message})`,
    );
    if (problem) return problem;
  }
  return undefined;
}

/** Most entries of a working tree {@link unsafeNestedRepositories} walks; past it, the tree is refused. */
export const MAX_WALK_ENTRIES = 2_000_000;
/** Folders read at once while walking. */
const WALK_BATCH = 64;

/**
 * The nested repositories of the working tree `top` (real path) that git must not look into,
 * with why (see {@link nestedRepositoryProblem}): git looks into every one it meets, not only at
 * gitlinks, since telling whether an untracked folder is a repository reads its `.git`, `HEAD`
 * and `commondir` (following symlinks: a `commondir` symlinked to /dev/ptmx held `git status`
 * and `ls-files --others` until their timeout). Every folder is walked (no symlink followed, the
 * top's own `.git` left out), at most {@link MAX_WALK_ENTRIES} entries: past that a single
 * problem says so.
 */
export async function unsafeNestedRepositories(
  top: string,
  trusted: string[],
): Promise<Array<{ path: string; problem: string }>> {
  const found: Array<{ path: string; problem: string }> = [];
  let frontier = [top];
  let seen = 0;
  while (frontier.length > 0) {
    const next: string[] = [];
    for (let i = 0; i < frontier.length; i += WALK_BATCH) {
      await Promise.all(
        frontier.slice(i, i + WALK_BATCH).map(async (dir) => {
          const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
          seen += entries.length;
          for (const e of entries) {
            if (e.name === '.git') {
              if (dir === top) continue;
              const problem = await nestedRepositoryProblem(top, dir, trusted);
              if (problem) found.push({ path: path.relative(top, dir), problem });
            } else if (e.isDirectory()) next.push(path.join(dir, e.name));
          }
        }),
      );
      if (seen > MAX_WALK_ENTRIES)
        return [{ path: '.', problem: `the working tree holds over ${MAX_WALK_ENTRIES} entries, too many to check` }];
    }
    frontier = next;
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The message of a refusal to look into a nested repository. */
export function nestedRefusal(problem: string): string {
  return `a nested repository is not looked into by the worker's git: ${problem} (only plain files and folders: the worker's git would read or follow it outside the sandbox)`;
}
