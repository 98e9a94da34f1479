import { copyFileSync, lstatSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { workerGit } from './worker-git';

/** Content settings of a repository's config that decide how files are checked out and hashed; copied into a borrowing one. */
const CONTENT_SETTINGS =
  /^core\.(autocrlf|eol|safecrlf|symlinks|ignorecase|precomposeunicode|filemode|checkroundtripencoding)$/;

const trim = (out: string) => out.trim();

/**
 * Makes an empty git repository at `dir` (a work tree with its `.git`, `dir` made if missing)
 * that borrows the objects of the repository at `from` (any folder in it): `git init` without a
 * template (no hooks, not even samples), `from`'s object format, `from`'s object store as its
 * alternate (git follows that store's own alternates in turn), `from`'s content settings, and its
 * ignore and attribute rules (`info/exclude`, `info/attributes`). No refs, nothing checked out.
 * `branch` names the unborn branch of its HEAD. Every command goes through workerGit.
 */
export async function initBorrowingRepository(from: string, dir: string, branch?: string): Promise<void> {
  const format = trim(await workerGit(from, ['rev-parse', '--show-object-format']));
  const common = trim(await workerGit(from, ['rev-parse', '--path-format=absolute', '--git-common-dir']));
  const objects = realpathSync(path.join(common, 'objects'));
  const settings = await workerGit(from, ['config', '-z', '--get-regexp', CONTENT_SETTINGS.source]).catch(() => '');
  await workerGit(path.dirname(dir), [
    'init',
    '--quiet',
    '--template=',
    `--object-format=${format}`,
    ...(branch ? ['-b', branch] : []),
    dir,
  ]);
  const gitDir = path.join(dir, '.git');
  mkdirSync(path.join(gitDir, 'objects', 'info'), { recursive: true });
  writeFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), `${objects}\n`);
  mkdirSync(path.join(gitDir, 'info'), { recursive: true });
  for (const name of ['exclude', 'attributes']) {
    const source = path.join(common, 'info', name);
    if (lstatSync(source, { throwIfNoEntry: false })?.isFile()) copyFileSync(source, path.join(gitDir, 'info', name));
  }
  for (const entry of settings.split('\0').filter(Boolean)) {
    const [key = '', value = ''] = entry.split('\n');
    if (CONTENT_SETTINGS.test(key) && !value.startsWith('-')) await workerGit(dir, ['config', '--local', key, value]);
  }
}
