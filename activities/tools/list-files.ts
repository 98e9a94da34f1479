import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { resolveInside } from './confine';
import { fsToolError, statPath } from './text-files';
import { ToolError, type Tool } from './types';

const ListFilesInputSchema = z.object({
  path: z.string().min(1).describe('Directory relative to the workspace root; "." for the root itself'),
});
/** Input of `list_files`. */
export type ListFilesInput = z.infer<typeof ListFilesInputSchema>;

function entryLine(root: string, dir: string, name: string, isSymlink: boolean): string {
  if (isSymlink) {
    // Say nothing about what a link outside the workspace points at.
    try {
      resolveInside(root, path.join(dir, name));
    } catch {
      return `${name} (symlink leading outside the workspace or nowhere)`;
    }
  }
  const stats = statSync(resolveInside(root, path.join(dir, name)));
  const link = isSymlink ? ' (symlink)' : '';
  return stats.isDirectory() ? `${name}/${link}` : `${name} (${stats.size} bytes)${link}`;
}

/**
 * `list_files { path }`: one level of a workspace directory, sorted by name; directories end
 * in `/`, files show their size in bytes; `.git` is left out.
 */
export const listFilesTool: Tool<ListFilesInput> = {
  name: 'list_files',
  description:
    'List one level of a directory in the workspace, sorted by name. Directories end with "/", ' +
    'files show their size in bytes. Use "." for the workspace root. .git is not listed.',
  class: 'read',
  input: ListFilesInputSchema,
  async run(input, ctx) {
    const abs = resolveInside(ctx.root, input.path);
    if (!statPath(abs, input.path).isDirectory()) {
      throw new ToolError(`path ${input.path} is a file, not a directory: use read_file`);
    }
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      throw fsToolError(err, input.path);
    }
    const lines = entries
      .filter((entry) => entry.name !== '.git')
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((entry) => entryLine(ctx.root, input.path, entry.name, entry.isSymbolicLink()));
    return lines.length > 0 ? lines.join('\n') : `(${input.path} is empty)`;
  },
};
