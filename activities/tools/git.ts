import { realpathSync } from 'node:fs';
import { z } from 'zod';
import { GitError, workerGit } from '../git/worker-git';
import { capHeadTail } from './output';
import { ToolError, type Tool, type ToolContext } from './types';

const NoInputSchema = z.object({});
/** Input of `git_diff` and `git_status`: nothing. */
export type NoInput = z.infer<typeof NoInputSchema>;

const MAX_BUFFER = 64 * 1024 * 1024;

/**
 * Runs git in the workspace through the worker's hardened runner (activities/git/worker-git.ts:
 * no hook, driver or program of the repository runs, no secret in its environment), with the
 * tool's timeout and cancellation. A failure is a ToolError the model reads.
 */
async function git(args: string[], ctx: ToolContext): Promise<string> {
  // One at a time per workspace: read tools run side by side, and each git on a large file the
  // agent made may take up to its memory limit (LOOPWRIGHT_GIT_MEMORY, worker-git.ts).
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const before = queues.get(ctx.root) ?? Promise.resolve();
  const tail = before.then(() => mine);
  queues.set(ctx.root, tail);
  try {
    await before;
    ctx.signal?.throwIfAborted();
    return await runGit(args, ctx);
  } finally {
    release();
    if (queues.get(ctx.root) === tail) queues.delete(ctx.root);
  }
}

/** The end of each workspace's queue of git tool calls. */
const queues = new Map<string, Promise<void>>();

async function runGit(args: string[], ctx: ToolContext): Promise<string> {
  try {
    return await workerGit(realpathSync(ctx.root), args, {
      timeoutMs: ctx.commandTimeoutMs,
      maxBuffer: MAX_BUFFER,
      signal: ctx.signal,
    });
  } catch (err) {
    if (ctx.signal?.aborted || !(err instanceof GitError)) throw err;
    throw new ToolError(`git ${args.join(' ')} failed: ${err.reason}`);
  }
}

async function requireRepo(ctx: ToolContext): Promise<void> {
  try {
    await git(['rev-parse', '--is-inside-work-tree'], ctx);
  } catch (err) {
    if (ctx.signal?.aborted) throw err;
    throw new ToolError('the workspace is not a git repository: git_diff and git_status need one');
  }
}

/**
 * `git_diff {}`: `git diff HEAD` of the workspace (limited to it, against the empty tree when
 * there is no commit yet) followed by the untracked files, capped at `ctx.outputCapChars`.
 * Nothing of the repository's runs (hooks, fsmonitor, external diff, textconv, filters); the
 * contents of submodules are not looked into (their new commits are shown).
 */
export const gitDiffTool: Tool<NoInput> = {
  name: 'git_diff',
  description:
    'Show every change in the workspace since the last commit (git diff HEAD), followed by the list of untracked files.',
  class: 'read',
  input: NoInputSchema,
  async run(_input, ctx) {
    await requireRepo(ctx);
    let base = 'HEAD';
    try {
      await git(['rev-parse', '--verify', '--quiet', 'HEAD'], ctx);
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      base = (await git(['hash-object', '-t', 'tree', '/dev/null'], ctx)).trim();
    }
    const diff = await git(
      ['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--ignore-submodules=dirty', '--relative', base],
      ctx,
    );
    const untracked = (await git(['ls-files', '--others', '--exclude-standard'], ctx)).split('\n').filter(Boolean);
    const parts = [
      diff.trim() === ''
        ? `no changes to tracked files since ${base === 'HEAD' ? 'HEAD' : 'the start (no commits yet)'}`
        : diff.trimEnd(),
    ];
    parts.push(
      untracked.length > 0 ? `untracked files:\n${untracked.map((f) => `  ${f}`).join('\n')}` : 'no untracked files',
    );
    return capHeadTail(parts.join('\n\n'), ctx.outputCapChars);
  },
};

/**
 * `git_status {}`: `git status --porcelain=v1 --branch` of the workspace, run like `git_diff`
 * (nothing of the repository's runs; changes inside submodules are not looked into).
 */
export const gitStatusTool: Tool<NoInput> = {
  name: 'git_status',
  description: 'Show the branch and the changed, staged and untracked files (git status --porcelain=v1 --branch).',
  class: 'read',
  input: NoInputSchema,
  async run(_input, ctx) {
    await requireRepo(ctx);
    const status = await git(['status', '--porcelain=v1', '--branch', '--ignore-submodules=dirty'], ctx);
    return capHeadTail(status.trimEnd(), ctx.outputCapChars);
  },
};
