import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { snapshotWorkingTree } from '../../../activities/git/snapshot';

/**
 * snapshotWorkingTree stages by plumbing what `git add -A` would (so the diff policy and the
 * per-attempt commit see the agent's whole working state), without touching the real index.
 */
let root: string;
const git = (...args: string[]) =>
  execFileSync('git', ['-c', 'commit.gpgSign=false', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env },
  }).trim();
const write = (file: string, text: string) => {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
};

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lw-snapshot-'));
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'T');
  git('config', 'user.email', 't@localhost');
  write('.gitignore', 'build/\n*.log\n');
  write('keep.txt', 'keep\n');
  write('edit.txt', 'before\n');
  write('gone.txt', 'gone\n');
  write('file-then-dir', 'a file\n');
  write('dir-then-file/inner.txt', 'inner\n');
  write('run.sh', 'echo hi\n');
  write('forced.log', 'tracked though ignored\n');
  git('add', '-A');
  git('add', '-f', 'forced.log');
  git('commit', '-q', '-m', 'base');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

test('the snapshot is the tree `git add -A` would stage: edits, deletions, type changes, modes, links, ignores, embedded repositories', async () => {
  write('edit.txt', 'after\n');
  unlinkSync(path.join(root, 'gone.txt'));
  unlinkSync(path.join(root, 'file-then-dir'));
  write('file-then-dir/now.txt', 'now a folder\n');
  rmSync(path.join(root, 'dir-then-file'), { recursive: true });
  write('dir-then-file', 'now a file\n');
  chmodSync(path.join(root, 'run.sh'), 0o755);
  symlinkSync('keep.txt', path.join(root, 'link'));
  write('new/deep/file.txt', 'new\n');
  write('build/out.js', 'ignored\n');
  write('debug.log', 'ignored\n');
  write('forced.log', 'changed, still tracked\n');
  mkdirSync(path.join(root, 'embedded'));
  execFileSync(
    'sh',
    ['-c', 'git init -q && echo e > e && git add e && git -c user.name=E -c user.email=e@localhost commit -q -m e'],
    { cwd: path.join(root, 'embedded') },
  );
  git('add', 'keep.txt'); // the real index as the agent left it must not matter, nor change
  const indexBefore = git('ls-files', '-s', '--debug');

  const snapshot = await snapshotWorkingTree(root);

  const scratch = path.join(mkdtempSync(path.join(tmpdir(), 'lw-snapshot-index-')), 'index');
  const withAddAll = (cmd: string) =>
    execFileSync('sh', ['-c', cmd], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, GIT_INDEX_FILE: scratch },
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  withAddAll('git read-tree HEAD && git add -A');
  expect(snapshot).toBe(withAddAll('git write-tree'));
  const entries = git('ls-tree', '-r', snapshot);
  expect(entries).toContain('100755 blob');
  expect(entries).toMatch(/120000 blob \S+\tlink/);
  expect(entries).toMatch(/160000 commit \S+\tembedded/);
  expect(entries).not.toContain('build/out.js');
  expect(git('ls-files', '-s', '--debug')).toBe(indexBefore);
  rmSync(path.dirname(scratch), { recursive: true, force: true });
});

test('a snapshot from a subfolder covers that subfolder, and a repository without commits starts from the empty tree', async () => {
  write('app/src/a.js', '1;\n');
  write('other.txt', 'not in app\n');
  const tree = await snapshotWorkingTree(path.join(root, 'app'));
  expect(git('ls-tree', '-r', '--name-only', tree).split('\n')).toEqual([
    '.gitignore',
    'app/src/a.js',
    'dir-then-file/inner.txt',
    'edit.txt',
    'file-then-dir',
    'forced.log',
    'gone.txt',
    'keep.txt',
    'run.sh',
  ]);
  const fresh = mkdtempSync(path.join(tmpdir(), 'lw-snapshot-fresh-'));
  try {
    execFileSync('git', ['init', '-q'], { cwd: fresh });
    writeFileSync(path.join(fresh, 'first.txt'), 'first\n');
    const first = await snapshotWorkingTree(fresh);
    expect(execFileSync('git', ['ls-tree', '--name-only', first], { cwd: fresh, encoding: 'utf8' })).toBe(
      'first.txt\n',
    );
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
});
