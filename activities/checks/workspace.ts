import { mkdirSync } from 'node:fs';
import { workerTmpDir } from '../../server/private-folder';

function safe(workflowId: string): string {
  return workflowId.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** The folder where a run's command checks run when its input names no workspace. */
export function defaultWorkspace(workflowId: string): string {
  return workerTmpDir('workspaces', safe(workflowId));
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
