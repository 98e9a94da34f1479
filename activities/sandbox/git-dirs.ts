import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { isWithin } from './profile';

function looksLikeGitDir(dir: string): boolean {
  try {
    return (
      statSync(dir).isDirectory() &&
      existsSync(path.join(dir, 'HEAD')) &&
      (existsSync(path.join(dir, 'objects')) || existsSync(path.join(dir, 'commondir')))
    );
  } catch {
    return false;
  }
}

/** `gitdir: <path>` of a `.git` file, resolved against the file's folder; null when it is not one. */
function gitdirOfFile(file: string): string | null {
  const m = /^gitdir: (.+)$/m.exec(readFileSync(file, 'utf8'));
  return m?.[1] ? path.resolve(path.dirname(file), m[1].trim()) : null;
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/**
 * Whether `gitdir` (named by the `.git` file `dotGit`) says it belongs to that file's folder:
 * a linked worktree's gitdir holds a `gitdir` file naming `dotGit` (what `git worktree add`
 * writes), a submodule's a `core.worktree` naming the folder. A `.git` file in the workspace
 * that names some other repository on the machine is not followed: it would make the sandbox
 * mount that repository (read-only, but readable) for whoever wrote the file.
 */
function pointsBack(gitdir: string, dotGit: string): boolean {
  const back = path.join(gitdir, 'gitdir');
  if (existsSync(back)) return sameFile(path.resolve(gitdir, readFileSync(back, 'utf8').trim()), dotGit);
  const config = path.join(gitdir, 'config');
  const worktree = existsSync(config) ? /^\s*worktree\s*=\s*(.+?)\s*$/im.exec(readFileSync(config, 'utf8')) : null;
  return !!worktree?.[1] && sameFile(path.resolve(gitdir, worktree[1]), path.dirname(dotGit));
}

/**
 * The object stores a git directory borrows (`objects/info/alternates`, and theirs in turn, as git
 * follows them, 5 deep): an L2 run's own repository borrows the target repository's. Only the
 * `objects` folder of a git directory counts, and only it is mounted: none of that repository's
 * refs, logs or worktrees (another run's work would be there).
 */
function alternateStores(gitDir: string, depth = 0): string[] {
  const objects = path.join(gitDir, 'objects');
  let lines: string[];
  try {
    lines = readFileSync(path.join(objects, 'info', 'alternates'), 'utf8').split('\n');
  } catch {
    return [];
  }
  const stores: string[] = [];
  for (const line of lines.map((l) => l.trim())) {
    if (!line || line.startsWith('#') || line.startsWith('"')) continue;
    let store: string;
    try {
      store = realpathSync(path.resolve(objects, line));
    } catch {
      continue;
    }
    if (path.basename(store) !== 'objects' || !looksLikeGitDir(path.dirname(store))) continue;
    stores.push(store);
    if (depth < 4) stores.push(...alternateStores(path.dirname(store), depth + 1));
  }
  return stores;
}

/**
 * The git directories a workspace uses, found by reading files (nothing is run): the nearest
 * `.git` at or above the workspace, and, when that is a file (a linked worktree or a submodule),
 * the directory it points to and that directory's common dir; and the object stores they borrow
 * (see {@link alternateStores}). The sandbox mounts them
 * read-only, so code in the workspace can read history but cannot commit, move refs or write
 * hooks or config. A `.git` file that points at something that is not a git directory is
 * ignored (it must not become a way to mount an arbitrary folder); so is one in the workspace
 * whose git directory does not point back at it (see {@link pointsBack}). A `.git` folder that
 * is not a git directory (the empty one the sandbox leaves where the workspace had none) is
 * passed over, as git itself passes it over.
 */
export function workspaceGitDirs(workspace: string): string[] {
  for (let dir = workspace; ; dir = path.dirname(dir)) {
    const dotGit = path.join(dir, '.git');
    let dirs: string[] | undefined;
    try {
      const st = statSync(dotGit);
      if (st.isDirectory()) dirs = looksLikeGitDir(dotGit) ? [dotGit] : undefined;
      else if (st.isFile()) {
        const gitdir = gitdirOfFile(dotGit);
        dirs = [];
        // In the workspace, a `.git` file is the sandboxed code's to write, unless the sandbox
        // protects it: trust it only when its git directory lies outside and points back at it.
        const trusted =
          dir !== workspace || (gitdir !== null && !isWithin(workspace, gitdir) && pointsBack(gitdir, dotGit));
        if (gitdir && trusted && looksLikeGitDir(gitdir)) {
          dirs.push(gitdir);
          const common = path.join(gitdir, 'commondir');
          if (existsSync(common)) {
            const commonDir = path.resolve(gitdir, readFileSync(common, 'utf8').trim());
            if (looksLikeGitDir(commonDir)) dirs.push(commonDir);
          }
        }
      }
    } catch {
      // no .git here
    }
    if (dirs) return [...new Set([...dirs, ...dirs.flatMap((d) => alternateStores(d))].map((d) => realpathSync(d)))];
    if (path.dirname(dir) === dir) return [];
  }
}
