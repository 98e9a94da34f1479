import { ApplicationFailure } from '@temporalio/common';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

async function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { stdout } = await exec('git', ['-c', 'core.fsmonitor=false', ...args], { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

const TRAILER = 'Loopwright-Effect';
const IDENTITY = ['-c', 'user.name=Loopwright', '-c', 'user.email=loopwright@localhost'];

export interface GitCommitEffectInput {
  /** `<workflow id>/<effect name>/<sequence>`: the same for every retry and every approval. */
  key: string;
  /** The repository the run worked on (its workspace). */
  repo: string;
  /** The run's branch with the verified change. */
  branch: string;
  targetBranch?: string;
  message: string;
}

export interface GitCommitEffectResult {
  target: string;
  commit: string;
  alreadyApplied: boolean;
}

function effectFailure(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'EffectError', nonRetryable: true, message });
}

/** The commit on `target` that carries the effect's trailer, if any: the ledger is git history. */
async function findApplied(top: string, target: string, key: string): Promise<string | undefined> {
  const log = await git(top, ['log', target, '--format=%H%x1f%(trailers:key=' + TRAILER + ',valueonly)%x1e']);
  for (const entry of log.split('\x1e')) {
    const [sha, value] = entry.trim().split('\x1f');
    if (sha && value?.trim() === key) return sha;
  }
  return undefined;
}

/**
 * Applies a verified L2/L3 change: the run's branch becomes one squashed commit on the target
 * branch, with the trailer `Loopwright-Effect: <key>`. Before acting it looks for that trailer on
 * the target, so a retried activity, a worker killed after committing, or a second approval
 * finds the commit and does nothing again. When the target is the branch checked out in the
 * repository it must be clean and is updated in place; otherwise the commit is made in a
 * temporary worktree and the branch moved with a compare-and-swap. A conflict is a
 * non-retryable `EffectError` and nothing is left half-done.
 */
export async function applyGitCommit(input: GitCommitEffectInput): Promise<GitCommitEffectResult> {
  const top = await git(input.repo, ['rev-parse', '--show-toplevel']);
  const checkedOut = await git(top, ['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => '');
  const target = input.targetBranch ?? checkedOut;
  if (!target) throw effectFailure(`repository ${top} has no branch checked out: give targetBranch`);
  const done = await findApplied(top, target, input.key);
  if (done) return { target, commit: done, alreadyApplied: true };
  const message = `${input.message}\n\n${TRAILER}: ${input.key}\n`;

  if (target === checkedOut) {
    const dirty = await git(top, ['status', '--porcelain', '--untracked-files=no']);
    if (dirty) throw effectFailure(`cannot commit to ${target}: the working tree of ${top} has uncommitted changes (${dirty.split('\n')[0].trim()} …)`);
    try {
      await git(top, [...IDENTITY, 'merge', '--squash', input.branch]);
      await git(top, [...IDENTITY, 'commit', '-q', '-m', message]);
    } catch (err) {
      await git(top, ['reset', '--hard', '-q', 'HEAD']).catch(() => undefined);
      throw effectFailure(`could not apply ${input.branch} onto ${target}: ${(err as Error).message.split('\n')[0]}`);
    }
    return { target, commit: await git(top, ['rev-parse', 'HEAD']), alreadyApplied: false };
  }

  const old = await git(top, ['rev-parse', `refs/heads/${target}`]).catch(() => {
    throw effectFailure(`target branch ${target} does not exist in ${top}`);
  });
  const scratch = path.join(mkdtempSync(path.join(tmpdir(), 'loopwright-effect-')), 'tree');
  try {
    await git(top, ['worktree', 'add', '--detach', '-q', scratch, old]);
    try {
      await git(scratch, [...IDENTITY, 'merge', '--squash', input.branch]);
      await git(scratch, [...IDENTITY, 'commit', '-q', '-m', message]);
    } catch (err) {
      throw effectFailure(`could not apply ${input.branch} onto ${target}: ${(err as Error).message.split('\n')[0]}`);
    }
    const commit = await git(scratch, ['rev-parse', 'HEAD']);
    await git(top, ['update-ref', `refs/heads/${target}`, commit, old]);
    return { target, commit, alreadyApplied: false };
  } finally {
    await git(top, ['worktree', 'remove', '--force', scratch]).catch(() => undefined);
    rmSync(path.dirname(scratch), { recursive: true, force: true });
  }
}
