import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { GIT_CONFIG_FILES, sanitizeGitConfig } from '../sandbox/git-config';
import { resolveInsideAsync } from './confine';
import { readTextFile } from './text-files';
import type { Tool } from './types';

const ReadFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root, e.g. src/index.ts'),
});
/** Input of `read_file`. */
export type ReadFileInput = z.infer<typeof ReadFileInputSchema>;

/** True when `abs` is a config file (`config`, `config.worktree`) inside a `.git` folder under `root`. */
function isGitConfig(root: string, abs: string): boolean {
  const parts = path.relative(root, abs).split(path.sep);
  return GIT_CONFIG_FILES.includes(parts.at(-1) ?? '') && parts.slice(0, -1).some((p) => p.toLowerCase() === '.git');
}

/**
 * `read_file { path }`: the UTF-8 text of one regular file in the workspace (text files up
 * to 2 MB). Directories, FIFOs, sockets, devices and binary files are refused with a
 * ToolError; nothing blocks the worker's thread (see text-files.ts). A repository's config file
 * under `.git` reads as the sandbox shows it (see sandbox/git-config.ts).
 */
export const readFileTool: Tool<ReadFileInput> = {
  name: 'read_file',
  description:
    'Read a UTF-8 text file in the workspace and return its full contents. ' +
    'The path is relative to the workspace root. Directories, binary files, files over 2 MB and ' +
    'anything that is not a regular file (named pipes, sockets, devices) are refused.',
  class: 'read',
  input: ReadFileInputSchema,
  async run(input, ctx) {
    const abs = await resolveInsideAsync(ctx.root, input.path);
    const text = await readTextFile(abs, input.path);
    // A repository's config may hold a remote's token or an auth header: the agent reads it as
    // its commands do in the sandbox, with only what git needs to read the repository.
    return isGitConfig(await realpath(ctx.root), abs) ? sanitizeGitConfig(text) : text;
  },
};
