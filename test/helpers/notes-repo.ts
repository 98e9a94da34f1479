import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A fresh git repository (in a temp folder) with one commit holding `notes.txt`. */
export function notesRepo(prefix = 'lw-repo-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 't@example.com');
  git('config', 'user.name', 'T');
  writeFileSync(path.join(dir, 'notes.txt'), 'the crash happened at 3am\n');
  git('add', '.');
  git('commit', '-qm', 'init');
  return dir;
}
