import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { snapshotWorkingTree } from '../../activities/git/snapshot';
import { FailureType } from '../../common/failure-types';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';

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
