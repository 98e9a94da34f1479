import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { checkOutTree } from '../../activities/checks/tests/trees';
import { snapshotWorkingTree } from '../../activities/git/snapshot';
import { FailureType } from '../../common/failure-types';
import { runShell, sandboxIn, toolContext, withEnv } from '../helpers/sandbox-tools';

/**
 * A command in the sandbox can make files that claim far more bytes than the disk they take:
 * sparse files (`truncate -s`, no disk, no time) and hard links to one file. The disk reserve
 * never sees them, but the worker's snapshot of the working tree hashed every claimed byte (four
 * sparse 1000 MiB files: 49 s of the worker's CPU, retried by the activity), and each of the
 * gate's checkouts of the tree wrote them out in full. The snapshot now refuses such a tree
 * before it hashes a byte, with a non-retryable failure that names the worst file.
 */
let dir: string;
let repo: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-amplify-')));
  repo = path.join(dir, 'repo');
  mkdirSync(repo);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'base');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function refusal(): Promise<ApplicationFailure> {
  const err: unknown = await snapshotWorkingTree(repo).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

test.each([
  ['sparse files', 'for i in 1 2 3 4; do truncate -s 1000M big$i.bin; done'],
  [
    'hard links to one file',
    'head -c 40M /dev/urandom > one.bin && for i in 1 2 3 4 5; do ln one.bin link$i.bin; done',
  ],
  ['a tracked file made sparse', 'truncate -s 900M a.txt'],
])(
  'a command that leaves %s in the workspace gets no snapshot of it: refused before hashing, not retried',
  async (_what, script) => {
    const c = toolContext(sandboxIn(dir), repo, ['sh'], 60_000);
    expect(await runShell(c, `${script} && echo made`)).toContain('made');
    const err = await refusal();
    expect(err.type).toBe(FailureType.Workspace);
    expect(err.nonRetryable).toBe(true);
    expect(err.message).toMatch(
      /was not snapshotted: its files claim \d+ MiB but hold \d+ MiB on disk \(sparse files or hard links, the largest \S+\.(bin|txt)/,
    );
  },
  120_000,
);

test('files that hold what they claim are snapshotted, however large: a 100 MiB file, and small files', async () => {
  const c = toolContext(sandboxIn(dir), repo, ['sh'], 60_000);
  expect(
    await runShell(
      c,
      'head -c 100M /dev/urandom > data.bin && for i in $(seq 1 200); do echo $i > small$i.txt; done && echo made',
    ),
  ).toContain('made');
  const tree = await snapshotWorkingTree(repo);
  const listed = execFileSync('git', ['ls-tree', '--name-only', tree], { cwd: repo }).toString();
  expect(listed).toContain('data.bin');
  expect(listed).toContain('small200.txt');
}, 120_000);

test('a gate checkout of a tree is held to the disk reserve: what a command left just above it is not written out again', async () => {
  const c = toolContext(sandboxIn(dir), repo, ['sh'], 60_000);
  expect(await runShell(c, 'for i in 1 2 3 4; do head -c 52428800 /dev/urandom > r$i.bin; done; echo wrote')).toContain(
    'wrote',
  );
  const tree = await snapshotWorkingTree(repo);
  const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo }).toString().trim();
  const freeMiB = () => {
    const st = statfsSync(repo);
    return Math.floor((st.bavail * st.bsize) / 2 ** 20);
  };
  // Room for about half of the checkout's 200 MiB.
  const keep = Math.max(0, freeMiB() - 100);
  const under = path.join(dir, 'checkouts');
  await withEnv({ LOOPWRIGHT_SANDBOX_DISK_FREE: `${keep}m` }, async () => {
    await expect(checkOutTree(repo, tree, base, under, 'candidate')).rejects.toThrow(
      /the candidate checkout for the tests check was not written: the disk holding the workspace has \d+ MiB free/,
    );
  });
  expect(freeMiB()).toBeGreaterThan(keep - 100);
  expect(readdirSync(under)).toEqual([]);
  // With the room, the same checkout is written.
  const made = await checkOutTree(repo, tree, base, under, 'candidate');
  expect(statSync(path.join(made.dir, 'r4.bin')).size).toBe(52428800);
  await made.remove();
}, 120_000);
