import { type ApplicationFailure } from '@temporalio/common';
import { snapshotWorkingTree } from '../../git/snapshot';
import { workerGit } from '../../git/worker-git';
import { FailureType, nonRetryableFailure } from '../../../common/failure-types';

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

const workspaceError = (message: string): ApplicationFailure => nonRetryableFailure(FailureType.Workspace, message);

/**
 * The workspace's place in its repository and the two trees to compare: the subtree at `root`
 * in `baseRef`, and in the working state (HEAD plus staged, unstaged and untracked, not ignored,
 * changes), which is staged into a temporary index so the repository's own index is untouched.
 */
export async function resolveTrees(
  root: string,
  baseRef: string,
): Promise<{ base: string; baseTree: string; workTree: string }> {
  const prefix = await workerGit(root, ['rev-parse', '--show-prefix'], BIG).then(
    (out) => out.trim(),
    (err: Error) => {
      throw workspaceError(
        `workspace ${root} is not a git repository (${err.message}): the diff policy compares git commits`,
      );
    },
  );
  const base = baseRef.startsWith('-')
    ? ''
    : await workerGit(root, ['rev-parse', '--verify', '--quiet', `${baseRef}^{commit}`], BIG).then(
        (out) => out.trim(),
        () => '',
      );
  if (!base)
    throw workspaceError(
      `base ${baseRef} is not a commit in the repository at ${root}: give the commit the run started from`,
    );
  const emptyTree = (await workerGit(root, ['hash-object', '-t', 'tree', '/dev/null'], BIG)).trim();
  const subtree = (treeish: string) =>
    workerGit(root, ['rev-parse', '--verify', '--quiet', `${treeish}:${prefix}`], BIG).then(
      (out) => out.trim(),
      () => emptyTree,
    );
  return { base, baseTree: await subtree(base), workTree: await subtree(await snapshotWorkingTree(root)) };
}

/** The changed paths between two trees, renames detected. */
export async function diffTrees(root: string, from: string, to: string): Promise<Change[]> {
  const fields = (await workerGit(root, ['diff-tree', '-r', '-z', '-M', '--raw', '--no-abbrev', from, to], BIG)).split(
    '\0',
  );
  const changes: Change[] = [];
  const field = (k: number): string => {
    const value = fields[k];
    if (value === undefined) throw new Error(`git diff-tree ${from} ${to}: its -z output ends inside a record`);
    return value;
  };
  for (let i = 0; i < fields.length - 1;) {
    const [, , oldOid, newOid, score] = field(i).slice(1).split(' ');
    if (oldOid === undefined || newOid === undefined || score === undefined)
      throw new Error(`git diff-tree ${from} ${to}: unexpected record ${JSON.stringify(fields[i])}`);
    const status = score.charAt(0);
    const zero = /^0+$/;
    if (status === 'R' || status === 'C') {
      changes.push({ status, oldPath: field(i + 1), path: field(i + 2), oldOid, newOid });
      i += 3;
    } else {
      changes.push({
        status,
        path: field(i + 1),
        oldOid: zero.test(oldOid) ? null : oldOid,
        newOid: zero.test(newOid) ? null : newOid,
      });
      i += 2;
    }
  }
  return changes;
}

/**
 * The lines of `oldOid` that `newOid` changes or removes (1-based line numbers of the old blob,
 * with their text): empty when the change only adds lines. A hunk that only appends after a last
 * line without a newline shows that line as removed and added again: it is not counted.
 */
export async function removedLines(
  root: string,
  oldOid: string,
  newOid: string,
): Promise<Array<{ line: number; text: string }>> {
  const removed: Array<{ line: number; text: string }> = [];
  const diff = await workerGit(
    root,
    ['diff', '-U0', '--no-color', '--no-ext-diff', '--no-textconv', oldOid, newOid],
    BIG,
  );
  for (const hunk of diff.split(/^(?=@@ )/m).slice(1)) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@/.exec(hunk);
    if (!m || m[2] === '0') continue;
    const lines = hunk
      .split('\n')
      .slice(1)
      .filter((l) => !l.startsWith('\\'));
    const minus = lines.filter((l) => l.startsWith('-')).map((l) => l.slice(1));
    const plus = lines.filter((l) => l.startsWith('+')).map((l) => l.slice(1));
    if (minus.every((text, i) => plus[i] === text)) continue;
    minus.forEach((text, i) => removed.push({ line: Number(m[1]) + i, text }));
  }
  return removed;
}

/** Ignored files and folders in the working tree of `root` (`ls-files --others --ignored --directory`). */
export async function ignoredPaths(root: string): Promise<string[]> {
  const out = await workerGit(
    root,
    ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'],
    BIG,
  );
  return out.split('\0').filter(Boolean);
}
