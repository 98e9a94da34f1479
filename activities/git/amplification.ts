import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';

/**
 * How many bytes the files of a working tree may claim beyond what they hold on disk. Sparse
 * files (`truncate -s 1G`, which takes no disk and no time) and hard links to one file claim
 * bytes the workspace's disk reserve never sees: hashing them costs the worker about 12 s of CPU
 * per GiB (measured: four sparse 1000 MiB files, 49 s), and every gate checkout of the tree writes
 * them out in full. Small files git stores inline (ext4's inline data has no blocks) and the tails
 * of files stay far below this.
 */
export const AMPLIFICATION_SLACK_BYTES = 64 * 1024 * 1024;

const MiB = 1024 * 1024;

/**
 * Refuses (non-retryable, before any byte is hashed) a working tree under `root` whose files
 * (`paths`, relative to `root`) claim more than {@link AMPLIFICATION_SLACK_BYTES} beyond the disk
 * they hold, each file counted once per path and each inode's blocks once.
 */
export async function refuseAmplifiedTree(root: string, paths: string[]): Promise<void> {
  const inodes = new Set<string>();
  let claimed = 0;
  let held = 0;
  let worst = { file: '', bytes: 0 };
  for (let i = 0; i < paths.length; i += 256) {
    const stats = await Promise.all(
      paths.slice(i, i + 256).map((p) =>
        lstat(path.join(root, p), { bigint: false }).then(
          (s) => ({ p, s }),
          () => undefined, // deleted since it was listed: nothing to hash
        ),
      ),
    );
    for (const entry of stats) {
      if (!entry?.s.isFile()) continue;
      const { p, s } = entry;
      const key = `${s.dev}:${s.ino}`;
      const onDisk = inodes.has(key) ? 0 : s.blocks * 512;
      inodes.add(key);
      claimed += s.size;
      held += onDisk;
      if (s.size - onDisk > worst.bytes) worst = { file: p, bytes: s.size - onDisk };
    }
  }
  if (claimed - held > AMPLIFICATION_SLACK_BYTES)
    throw nonRetryableFailure(
      FailureType.Workspace,
      `the working tree under ${root} was not snapshotted: its files claim ${Math.round(claimed / MiB)} MiB but hold ${Math.round(held / MiB)} MiB on disk (sparse files or hard links, the largest ${worst.file} with ${Math.round(worst.bytes / MiB)} MiB it does not hold): remove them, or write their content out`,
    );
}
