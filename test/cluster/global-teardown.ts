import { rmSync } from 'node:fs';
import { stopCluster } from '../../server/cluster/control';

/** Stops every process of the test cluster by the pid it was started with, then deletes its folder. */
export default async function clusterTeardown(): Promise<void> {
  const dir = process.env.LOOPWRIGHT_CLUSTER_DIR;
  if (!dir) return;
  await stopCluster(dir);
  if (!process.env.LOOPWRIGHT_KEEP_CLUSTER_DIR) rmSync(dir, { recursive: true, force: true });
  if (process.env.LOOPWRIGHT_CLUSTER_KEYS_DIR)
    rmSync(process.env.LOOPWRIGHT_CLUSTER_KEYS_DIR, { recursive: true, force: true });
}
