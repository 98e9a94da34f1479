import { execFile } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { z } from 'zod';
import { scrubEnv } from './env';
import { capHeadTail } from './output';
import { ToolError, type Tool, type ToolContext } from './types';

const NoInputSchema = z.object({});
/** Input of `git_diff` and `git_status`: nothing. */
export type NoInput = z.infer<typeof NoInputSchema>;

// Repository config is writable by commands the agent runs: keep it from running programs.
const SAFE = ['-c', 'core.fsmonitor=false'];
const MAX_BUFFER = 64 * 1024 * 1024;

/** Runs git in the workspace; resolves stdout, or rejects with git's stderr. */
function git(args: string[], ctx: ToolContext): Promise<string> {
  const env = scrubEnv(process.env);
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) delete env[name];
  env.GIT_OPTIONAL_LOCKS = '0';
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE, ...args],
      { cwd: realpathSync(ctx.root), env, timeout: ctx.commandTimeoutMs, maxBuffer: MAX_BUFFER, signal: ctx.signal, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (ctx.signal?.aborted) reject(ctx.signal.reason);
        else if (err) reject(new ToolError(`git ${args.join(' ')} failed: ${(stderr || err.message).trim().split('\n')[0]}`));
        else resolve(stdout);
      },
    );
  });
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
 * External diff programs, textconv filters and the fsmonitor hook are disabled.
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
    const diff = await git(['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--relative', base], ctx);
    const untracked = (await git(['ls-files', '--others', '--exclude-standard'], ctx)).split('\n').filter(Boolean);
    const parts = [diff.trim() === '' ? `no changes to tracked files since ${base === 'HEAD' ? 'HEAD' : 'the start (no commits yet)'}` : diff.trimEnd()];
    parts.push(untracked.length > 0 ? `untracked files:\n${untracked.map((f) => `  ${f}`).join('\n')}` : 'no untracked files');
    return capHeadTail(parts.join('\n\n'), ctx.outputCapChars);
  },
};

/** `git_status {}`: `git status --porcelain=v1 --branch` of the workspace. */
export const gitStatusTool: Tool<NoInput> = {
  name: 'git_status',
  description: 'Show the branch and the changed, staged and untracked files (git status --porcelain=v1 --branch).',
  class: 'read',
  input: NoInputSchema,
  async run(_input, ctx) {
    await requireRepo(ctx);
    const status = await git(['status', '--porcelain=v1', '--branch'], ctx);
    return capHeadTail(status.trimEnd(), ctx.outputCapChars);
  },
};
