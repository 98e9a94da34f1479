import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { workerTmpDir } from '../../server/private-folder';

function safe(workflowId: string): string {
  return workflowId.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/**
 * The folder where a run's command checks run when its input names no workspace: one per
 * execution of the run (`runId`, the same for all its attempts), under a name no other run id
 * shares. Named by the run's id alone (before), a later run under the same id (`--reuse`), or under one that
 * `safe` turns into the same name (`a/b`, `a_b`), found whatever the earlier run's candidate left
 * there (a `conftest.py` that passes every test, its outputs), since the folder is never removed.
 */
export function defaultWorkspace(workflowId: string, runId?: string): string {
  const id = `${safe(workflowId)}-${createHash('sha256').update(workflowId).digest('hex').slice(0, 12)}`;
  return workerTmpDir('workspaces', id, ...(runId ? [safe(runId)] : []));
}

/** The gate's folder for a run's clean checkouts (each removed after use; see checks/tests.ts). */
export function gateScratchDir(workflowId: string): string {
  return workerTmpDir('gate', safe(workflowId));
}

/** A scratch folder of the run's own, outside its workspace (candidate files and the like), 0700. */
export function runScratchDir(workflowId: string): string {
  const dir = workerTmpDir('scratch', safe(workflowId));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
