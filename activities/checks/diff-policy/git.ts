import { ApplicationFailure } from '@temporalio/common';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

// Repository config is writable by commands the agent runs: keep it from running programs.
const SAFE = ['-c', 'core.fsmonitor=false', '-c', 'core.quotePath=false'];
const MAX_BUFFER = 256 * 1024 * 1024;

/** One changed path between two trees (`git diff-tree --raw -M`), relative to the workspace root. */
export interface Change {
  /** A added, D deleted, M modified, R renamed, T type changed. */
  status: string;
  path: string;
  /** The path at base, for a rename. */
  oldPath?: string;
  oldOid: string | null;
  newOid: string | null;
}

function gitEnv(indexFile?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0' };
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_PREFIX']) delete env[name];
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  return env;
}

/** Runs git in `cwd`; resolves stdout, or rejects with git's first line of stderr. */
export function git(cwd: string, args: string[], indexFile?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', [...SAFE, ...args], { cwd, env: gitEnv(indexFile), maxBuffer: MAX_BUFFER }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')} failed in ${cwd}: ${(stderr || err.message).trim().split('\n')[0]}`));
      else resolve(stdout);
    });
  });
}

function workspaceError(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'WorkspaceError', nonRetryable: true, message });
}

/**
 * The workspace's place in its repository and the two trees to compare: the subtree at `root`
 * in `baseRef`, and in the working state (HEAD plus staged, unstaged and untracked, not ignored,
 * changes), which is staged into a temporary index so the repository's own index is untouched.
 */
export async function resolveTrees(root: string, baseRef: string): Promise<{ base: string; baseTree: string; workTree: string }> {
  const prefix = await git(root, ['rev-parse', '--show-prefix']).then(
    (out) => out.trim(),
    (err: Error) => {
      throw workspaceError(`workspace ${root} is not a git repository (${err.message}): the diff policy compares git commits`);
    },
  );
  const base = baseRef.startsWith('-') ? '' : await git(root, ['rev-parse', '--verify', '--quiet', `${baseRef}^{commit}`]).then((out) => out.trim(), () => '');
  if (!base) throw workspaceError(`base ${baseRef} is not a commit in the repository at ${root}: give the commit the run started from`);
  const emptyTree = (await git(root, ['hash-object', '-t', 'tree', '/dev/null'])).trim();
  const subtree = (treeish: string) => git(root, ['rev-parse', '--verify', '--quiet', `${treeish}:${prefix}`]).then((out) => out.trim(), () => emptyTree);
  return { base, baseTree: await subtree(base), workTree: await subtree(await snapshotWorkingTree(root)) };
}

/**
 * Writes the working state under `root` as a tree object, through a temporary index that starts
 * from HEAD. It starts without stat data (not from a copy of the real index, whose newer mtime
 * would hide racily-clean edits), so every file is hashed from its content.
 */
async function snapshotWorkingTree(root: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'loopwright-diff-'));
  const indexFile = path.join(dir, 'index');
  try {
    const head = await git(root, ['rev-parse', '--verify', '--quiet', 'HEAD']).then(() => true, () => false);
    await git(root, head ? ['read-tree', 'HEAD'] : ['read-tree', '--empty'], indexFile);
    await git(root, ['add', '-A', '--', '.'], indexFile);
    return (await git(root, ['write-tree'], indexFile)).trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The changed paths between two trees, renames detected. */
export async function diffTrees(root: string, from: string, to: string): Promise<Change[]> {
  const fields = (await git(root, ['diff-tree', '-r', '-z', '-M', '--raw', '--no-abbrev', from, to])).split('\0');
  const changes: Change[] = [];
  for (let i = 0; i < fields.length - 1; ) {
    const [, , oldOid, newOid, score] = fields[i].slice(1).split(' ');
    const status = score[0];
    const zero = /^0+$/;
    if (status === 'R' || status === 'C') {
      changes.push({ status, oldPath: fields[i + 1], path: fields[i + 2], oldOid, newOid });
      i += 3;
    } else {
      changes.push({ status, path: fields[i + 1], oldOid: zero.test(oldOid) ? null : oldOid, newOid: zero.test(newOid) ? null : newOid });
      i += 2;
    }
  }
  return changes;
}

/** Regular files in a tree: path → blob id, for the paths `keep` accepts and at most `maxSize` bytes. */
export async function listBlobs(root: string, tree: string, keep: (file: string) => boolean, maxSize: number): Promise<Map<string, string>> {
  const blobs = new Map<string, string>();
  for (const entry of (await git(root, ['ls-tree', '--full-tree', '-r', '-z', '-l', tree])).split('\0')) {
    const m = /^(\d+) blob (\S+) +(\d+)\t([\s\S]+)$/.exec(entry);
    if (m && m[1] !== '120000' && Number(m[3]) <= maxSize && keep(m[4])) blobs.set(m[4], m[2]);
  }
  return blobs;
}

/** The text of each blob (`git cat-file --batch`); binary blobs (with a NUL byte) are left out. */
export function readBlobs(root: string, oids: string[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  if (oids.length === 0) return Promise.resolve(texts);
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...SAFE, 'cat-file', '--batch'], { cwd: root, env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`git cat-file --batch failed in ${root}: ${stderr.trim().split('\n')[0]}`));
      const out = Buffer.concat(chunks);
      let pos = 0;
      while (pos < out.length) {
        const nl = out.indexOf(10, pos);
        const [oid, type, size] = out.subarray(pos, nl).toString().split(' ');
        pos = nl + 1;
        if (type === 'missing' || size === undefined) continue;
        const body = out.subarray(pos, pos + Number(size));
        pos += Number(size) + 1;
        if (type === 'blob' && !body.includes(0)) texts.set(oid, body.toString('utf8'));
      }
      resolve(texts);
    });
    child.stdin.end(`${[...new Set(oids)].join('\n')}\n`);
  });
}

/** 1-based numbers of the lines `newOid` adds to `oldOid` (`git diff -U0` of the two blobs). */
export async function addedLines(root: string, oldOid: string, newOid: string): Promise<Set<number>> {
  const lines = new Set<number>();
  const diff = await git(root, ['diff', '-U0', '--no-color', '--no-ext-diff', '--no-textconv', oldOid, newOid]);
  for (const m of diff.matchAll(/^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/gm)) {
    const start = Number(m[1]);
    const count = m[2] === undefined ? 1 : Number(m[2]);
    for (let n = start; n < start + count; n++) lines.add(n);
  }
  return lines;
}
