import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startCluster, type ClusterOptions } from '../../server/cluster/cluster';
import { stopCluster } from '../../server/cluster/control';
import type { ClusterState } from '../../server/cluster/processes';
import { freePort } from '../../server/free-port';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { stopWorkerProcesses } from './cli';
import { judgeSays, script, workerSays } from './scripts';

/** What a secured-cluster test file reaches once its `beforeAll` has run. */
export interface SecuredCluster {
  state: ClusterState;
  model: ModelServer;
}

/**
 * For a test file about a cluster behind TLS or an authorizer: registers a `beforeAll` that starts
 * a one-frontend cluster without workers of its own, configured by `configure` (given the cluster's
 * folder; it returns the client environment, the service variables and a UI port), and a scripted
 * model whose worker always answers `answer` and whose judge always passes; and an `afterAll` that
 * stops the worker processes the file started, the model and the cluster, runs `cleanup` and
 * removes the folder. The cluster's own folder: PostgreSQL, run as an unprivileged user under
 * root, must get through it.
 */
export function securedCluster(
  name: string,
  answer: string,
  configure: () => Promise<Pick<ClusterOptions, 'env' | 'serverEnv' | 'uiPort'>>,
  cleanup: () => void | Promise<void> = () => undefined,
): SecuredCluster {
  const dir = mkdtempSync(path.join(tmpdir(), `loopwright-${name}-cluster-`));
  const it = {} as SecuredCluster;
  beforeAll(async () => {
    it.state = await startCluster({
      dir,
      port: await freePort(),
      frontends: 1,
      workers: 0,
      ...(await configure()),
      log: (line) => process.stderr.write(`[${name} cluster] ${line}\n`),
    });
    it.model = await startModelServer({
      script: script(workerSays(1, answer, { times: undefined }), judgeSays(1, true, [], '', { times: undefined })),
      port: 0,
    });
  }, 300_000);
  afterAll(async () => {
    await stopWorkerProcesses();
    await it.model?.close();
    await stopCluster(dir);
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);
  return it;
}
