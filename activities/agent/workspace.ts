import { ApplicationFailure } from '@temporalio/common';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Autonomy } from '../../common/loop-spec';

const run = promisify(execFile);

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

function setupError(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'WorkspaceError', nonRetryable: true, message });
}

/** The branch an L2 run works on. */
export function runBranch(workflowId: string): string {
  return `loopwright/${workflowId.replace(/[^A-Za-z0-9._/-]+/g, '-').replace(/\/+/g, '-')}`;
}

/**
 * Where a run's agent works. L1 and L3 work in the given folder (L3 in a worktree too when the
 * loop delivers a git commit, which is made from the run's branch). L2 works in an isolated git
 * worktree on a fresh branch `loopwright/<run>` made from the repository's HEAD, under
 * `worktreesDir`; the repository's own working tree is never touched. Idempotent: a retry
 * finds the worktree it made.
 */
export async function prepareWorkspace(
  worktreesDir: string,
  input: { workflowId: string; workspace: string; autonomy: Autonomy; isolate?: boolean },
): Promise<{ root: string; branch: string | null; base: string | null }> {
  if (!existsSync(input.workspace) || !statSync(input.workspace).isDirectory()) {
    throw setupError(`workspace ${input.workspace} is not a folder on this worker: give an existing folder (shared by all workers)`);
  }
  const folder = realpathSync(input.workspace);
  if (input.autonomy !== 'L2' && !input.isolate) return { root: folder, branch: null, base: await git(folder, ['rev-parse', 'HEAD']).catch(() => null) };
  const top = await git(folder, ['rev-parse', '--show-toplevel']).catch(() => {
    throw setupError(`workspace ${folder} is not a git repository: an L2 run works on a branch in a git worktree`);
  });
  const branch = runBranch(input.workflowId);
  const root = path.join(worktreesDir, branch.replace(/\//g, '_'));
  if (existsSync(path.join(root, '.git'))) {
    const base = await git(top, ['merge-base', branch, 'HEAD']);
    return { root: realpathSync(root), branch, base };
  }
  mkdirSync(worktreesDir, { recursive: true });
  const exists = await git(top, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]).then(() => true, () => false);
  await git(top, exists ? ['worktree', 'add', root, branch] : ['worktree', 'add', '-b', branch, root, 'HEAD']);
  return { root: realpathSync(root), branch, base: await git(root, ['rev-parse', 'HEAD']) };
}

/**
 * Commits what an L2 attempt changed onto the run's branch (one commit per attempt with
 * changes), so the work is reviewable and lands nowhere else. Returns the commit, or null.
 */
export async function commitWorkspace(input: { root: string; branch: string; message: string }): Promise<{ commit: string | null }> {
  await git(input.root, ['add', '-A']);
  const staged = await git(input.root, ['diff', '--cached', '--name-only']);
  if (!staged) return { commit: null };
  await git(input.root, ['-c', 'user.name=Loopwright', '-c', 'user.email=loopwright@localhost', 'commit', '-q', '-m', input.message]);
  return { commit: await git(input.root, ['rev-parse', 'HEAD']) };
}
