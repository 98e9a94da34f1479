import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startCluster } from '../../server/cluster/cluster';
import { freePort } from '../../server/free-port';
import globalSetup from '../global-setup';
import { initKeyFile } from '../../crypto/key-file';

/**
 * `npm run test:cluster`: starts the production topology (PostgreSQL, Temporal's services as
 * separate processes, two frontends, the Web UI) from a fresh folder, then the suite's usual setup pointed at
 * it (LOOPWRIGHT_TEST_EXTERNAL_ADDRESS) instead of a dev server. The tests start their own worker
 * processes (with the scripted model), so the cluster starts none. test/cluster/global-teardown.ts
 * stops every process by its pid. LOOPWRIGHT_CLUSTER_DIR tells the failure tests where the
 * cluster's state is (which pid is which service).
 */
export default async function clusterSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopwright-cluster-'));
  process.env.LOOPWRIGHT_CLUSTER_DIR = dir;
  // A key ring of the cluster's own: its codec server (for the Web UI) reads it, and so does every
  // client and worker of the suite (set after the suite's setup, which would make another).
  const keysDir = mkdtempSync(path.join(tmpdir(), 'loopwright-cluster-keys-'));
  process.env.LOOPWRIGHT_CLUSTER_KEYS_DIR = keysDir;
  const keys = initKeyFile(path.join(keysDir, 'keys')).file;
  const started = Date.now();
  const state = await startCluster({
    dir,
    port: await freePort(),
    workers: 0,
    frontends: 2,
    uiPort: await freePort(),
    env: { ...process.env, LOOPWRIGHT_KEYS: keys },
    log: (line) => process.stderr.write(`[cluster] ${line}\n`),
  });
  process.stderr.write(
    `[cluster] running at ${state.addresses.join(', ')} after ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
  process.env.LOOPWRIGHT_TEST_EXTERNAL_ADDRESS = state.addresses[0];
  process.env.LOOPWRIGHT_CLUSTER_ADDRESSES = state.addresses.join(',');
  process.env.LOOPWRIGHT_CLUSTER_UI_URL = state.uiUrl;
  await globalSetup();
  process.env.LOOPWRIGHT_KEYS = keys;
}
