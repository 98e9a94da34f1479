import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Sections of a repository's config that git needs to read the repository (its format,
 * extensions, index and branch settings). Everything else is left out of what sandboxed code
 * and the file tools see: remotes whose URL holds a token, `http.<url>.extraheader` (where
 * actions/checkout keeps the job's token), credentials, url rewrites, includes.
 */
const KEPT_SECTIONS = new Set(['core', 'extensions', 'index', 'feature', 'branch', 'worktree']);

/** `text` (a git config file) with only the sections git needs to read the repository. */
export function sanitizeGitConfig(text: string): string {
  const out: string[] = [];
  let keep = false;
  for (const line of text.split('\n')) {
    const header = /^\s*\[\s*([A-Za-z0-9-]+)/.exec(line);
    if (header) keep = KEPT_SECTIONS.has((header[1] ?? '').toLowerCase());
    if (keep) out.push(line);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** The config files of a git directory: `config`, and a worktree's `config.worktree`. */
export const GIT_CONFIG_FILES = ['config', 'config.worktree'];

function subfolders(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(dir, e.name));
  } catch {
    return [];
  }
}

/**
 * The config files in a git directory: its own, its linked worktrees' (`worktrees/<name>/`) and
 * its submodules' (`modules/<name>/`, nested ones too, a few levels down), which are mounted with
 * it and hold remotes of their own.
 */
function configFilesOf(dir: string, depth = 0): string[] {
  const own = GIT_CONFIG_FILES.map((name) => path.join(dir, name)).filter((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
  if (depth >= 4) return own;
  const nested = [...subfolders(path.join(dir, 'worktrees')), ...subfolders(path.join(dir, 'modules'))];
  return [...own, ...nested.flatMap((d) => configFilesOf(d, depth + 1))];
}

let folder: string | undefined;

/**
 * For each config file in `gitDirs` (see configFilesOf), a sanitized read-only copy (a file of this process's own,
 * named by its content) and the path it stands in for: `[copy, config]`, for the sandbox to
 * mount over the original.
 */
export function sanitizedConfigMounts(gitDirs: string[]): Array<[string, string]> {
  const mounts: Array<[string, string]> = [];
  for (const file of new Set(gitDirs.flatMap((dir) => configFilesOf(dir)))) {
    const clean = sanitizeGitConfig(readFileSync(file, 'utf8'));
    if (!folder || !existsSync(folder)) folder = mkdtempSync(path.join(tmpdir(), 'loopwright-gitconfig-'));
    const copy = path.join(folder, `${createHash('sha256').update(clean).digest('hex')}.config`);
    if (!existsSync(copy)) {
      writeFileSync(copy, clean);
      chmodSync(copy, 0o444);
    }
    mounts.push([copy, file]);
  }
  return mounts;
}
