import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

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

/**
 * The git directories a workspace uses, found by reading files (nothing is run): the nearest
 * `.git` at or above the workspace, and, when that is a file (a linked worktree or a submodule),
 * the directory it points to and that directory's common dir. The sandbox mounts them
 * read-only, so code in the workspace can read history but cannot commit, move refs or write
 * hooks or config. A `.git` file that points at something that is not a git directory is
 * ignored (it must not become a way to mount an arbitrary folder).
 */
export function workspaceGitDirs(workspace: string): string[] {
  for (let dir = workspace; ; dir = path.dirname(dir)) {
    const dotGit = path.join(dir, '.git');
    let dirs: string[] | undefined;
    try {
      const st = statSync(dotGit);
      if (st.isDirectory()) dirs = looksLikeGitDir(dotGit) ? [dotGit] : [];
      else if (st.isFile()) {
        const gitdir = gitdirOfFile(dotGit);
        dirs = [];
        if (gitdir && looksLikeGitDir(gitdir)) {
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
    if (dirs) return [...new Set(dirs.map((d) => realpathSync(d)))];
    if (path.dirname(dir) === dir) return [];
  }
}
