import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

function safe(workflowId: string): string {
  return workflowId.replace(/[^A-Za-z0-9._-]+/g, '_');
}

/** The folder where a run's command checks run when its input names no workspace. */
export function defaultWorkspace(workflowId: string): string {
  return path.join(tmpdir(), 'loopwright', 'workspaces', safe(workflowId));
}

/** A scratch folder of the run's own, outside its workspace (candidate files and the like). */
export function runScratchDir(workflowId: string): string {
  const dir = path.join(tmpdir(), 'loopwright', 'scratch', safe(workflowId));
  mkdirSync(dir, { recursive: true });
  return dir;
}
