import { ApplicationFailure } from '@temporalio/common';
import { snapshotWorkingTree } from '../../git/snapshot';
import { workerGit, workerGitBytes } from '../../git/worker-git';

/** Listings and blobs of large repositories fit. */
const BIG = { maxBuffer: 256 * 1024 * 1024 };

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

function workspaceError(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'WorkspaceError', nonRetryable: true, message });
}

/**
 * The workspace's place in its repository and the two trees to compare: the subtree at `root`
 * in `baseRef`, and in the working state (HEAD plus staged, unstaged and untracked, not ignored,
 * changes), which is staged into a temporary index so the repository's own index is untouched.
 */
export async function resolveTrees(root: string, baseRef: string): Promise<{ base: string; baseTree: string; workTree: string }> {
  const prefix = await workerGit(root, ['rev-parse', '--show-prefix'], BIG).then(
    (out) => out.trim(),
    (err: Error) => {
      throw workspaceError(`workspace ${root} is not a git repository (${err.message}): the diff policy compares git commits`);
    },
  );
  const base = baseRef.startsWith('-') ? '' : await workerGit(root, ['rev-parse', '--verify', '--quiet', `${baseRef}^{commit}`], BIG).then((out) => out.trim(), () => '');
  if (!base) throw workspaceError(`base ${baseRef} is not a commit in the repository at ${root}: give the commit the run started from`);
  const emptyTree = (await workerGit(root, ['hash-object', '-t', 'tree', '/dev/null'], BIG)).trim();
  const subtree = (treeish: string) => workerGit(root, ['rev-parse', '--verify', '--quiet', `${treeish}:${prefix}`], BIG).then((out) => out.trim(), () => emptyTree);
  return { base, baseTree: await subtree(base), workTree: await subtree(await snapshotWorkingTree(root)) };
}

/** The changed paths between two trees, renames detected. */
export async function diffTrees(root: string, from: string, to: string): Promise<Change[]> {
  const fields = (await workerGit(root, ['diff-tree', '-r', '-z', '-M', '--raw', '--no-abbrev', from, to], BIG)).split('\0');
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
  for (const entry of (await workerGit(root, ['ls-tree', '--full-tree', '-r', '-z', '-l', tree], BIG)).split('\0')) {
    const m = /^(\d+) blob (\S+) +(\d+)\t([\s\S]+)$/.exec(entry);
    if (m && m[1] !== '120000' && Number(m[3]) <= maxSize && keep(m[4])) blobs.set(m[4], m[2]);
  }
  return blobs;
}

/** The text of each blob (`git cat-file --batch`); binary blobs (with a NUL byte) are left out. */
export async function readBlobs(root: string, oids: string[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  if (oids.length === 0) return texts;
  const out = await workerGitBytes(root, ['cat-file', '--batch'], { input: `${[...new Set(oids)].join('\n')}\n`, ...BIG });
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
  return texts;
}

/** 1-based numbers of the lines `newOid` adds to `oldOid` (`git diff -U0` of the two blobs). */
export async function addedLines(root: string, oldOid: string, newOid: string): Promise<Set<number>> {
  const lines = new Set<number>();
  const diff = await workerGit(root, ['diff', '-U0', '--no-color', '--no-ext-diff', '--no-textconv', oldOid, newOid], BIG);
  for (const m of diff.matchAll(/^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/gm)) {
    const start = Number(m[1]);
    const count = m[2] === undefined ? 1 : Number(m[2]);
    for (let n = start; n < start + count; n++) lines.add(n);
  }
  return lines;
}
