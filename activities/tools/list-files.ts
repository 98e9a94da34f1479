import type { Stats } from 'node:fs';
import { opendir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { resolveInsideAsync } from './confine';
import { FD_PATH, openFolderNoFollow } from './no-follow';
import { fsToolError, kindOf, Slicer, statPath } from './text-files';
import { ToolError, type Tool, type ToolContext } from './types';

/** Most entries list_files shows of one directory. */
export const MAX_LIST_ENTRIES = 1000;
/** Most names list_files reads from one directory (to sort them) before it stops reading. */
export const MAX_LIST_SCAN = 10_000;

const ListFilesInputSchema = z.object({
  path: z.string().min(1).describe('Directory relative to the workspace root; "." for the root itself'),
});
/** Input of `list_files`. */
export type ListFilesInput = z.infer<typeof ListFilesInputSchema>;

function describe(name: string, stats: Stats, link: string): string {
  if (stats.isDirectory()) return `${name}/${link}`;
  if (stats.isFile()) return `${name} (${stats.size} bytes)${link}`;
  return `${name} (${kindOf(stats)})${link}`;
}

async function entryLine(root: string, dir: string, name: string, isSymlink: boolean): Promise<string> {
  let abs: string;
  try {
    abs = await resolveInsideAsync(root, path.join(dir, name));
  } catch (err) {
    // Say nothing about what a link outside the workspace points at.
    if (isSymlink) return `${name} (symlink leading outside the workspace or nowhere)`;
    if (err instanceof ToolError) return `${name} (the worker's own: not listed)`;
    throw err;
  }
  let stats: Stats;
  try {
    stats = await stat(abs);
  } catch {
    return `${name} (gone or unreadable)`;
  }
  return describe(name, stats, isSymlink ? ' (symlink)' : '');
}

/** Up to MAX_LIST_SCAN names of `abs` (not `.git`), read asynchronously; `more` when it has others. */
async function readNames(
  abs: string,
  shown: string,
  ctx: ToolContext,
): Promise<{ names: Array<{ name: string; isSymlink: boolean }>; more: boolean }> {
  const names: Array<{ name: string; isSymlink: boolean }> = [];
  const slicer = new Slicer(ctx);
  let dir;
  let pinned;
  try {
    // Opened without following a symlink swapped in on its path since it was checked (no-follow.ts).
    pinned = await openFolderNoFollow(abs);
    dir = await opendir(`${FD_PATH}${pinned.fd}`, { bufferSize: 256 });
  } catch (err) {
    await pinned?.close();
    throw fsToolError(err, shown);
  }
  try {
    // The directory is closed however the loop ends (done, return, or a throw).
    for await (const entry of dir) {
      if (entry.name === '.git') continue;
      if (names.length === MAX_LIST_SCAN) return { names, more: true };
      names.push({ name: entry.name, isSymlink: entry.isSymbolicLink() });
      if (slicer.due()) await slicer.pause();
    }
  } catch (err) {
    throw fsToolError(err, shown);
  } finally {
    await pinned.close();
  }
  return { names, more: false };
}

/**
 * `list_files { path }`: one level of a workspace directory, sorted by name; directories end
 * in `/`, files show their size in bytes, anything else its kind (`(a named pipe (FIFO))`);
 * `.git` is left out. At most MAX_LIST_ENTRIES lines, with a last line that says how many
 * more there are (reading stops after MAX_LIST_SCAN names). Every fs call is async.
 */
export const listFilesTool: Tool<ListFilesInput> = {
  name: 'list_files',
  description:
    'List one level of a directory in the workspace, sorted by name. Directories end with "/", ' +
    'files show their size in bytes. Use "." for the workspace root. .git is not listed. ' +
    `At most ${MAX_LIST_ENTRIES} entries are shown.`,
  class: 'read',
  input: ListFilesInputSchema,
  async run(input, ctx) {
    const abs = await resolveInsideAsync(ctx.root, input.path);
    if (!(await statPath(abs, input.path)).isDirectory()) {
      throw new ToolError(`path ${input.path} is a file, not a directory: use read_file`);
    }
    const { names, more } = await readNames(abs, input.path, ctx);
    if (names.length === 0) return `(${input.path} is empty)`;
    names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const lines: string[] = [];
    for (const { name, isSymlink } of names.slice(0, MAX_LIST_ENTRIES)) {
      ctx.signal?.throwIfAborted();
      lines.push(await entryLine(ctx.root, input.path, name, isSymlink));
    }
    if (more) {
      lines.push(
        `… more entries: ${input.path} has over ${MAX_LIST_SCAN}; these are the first ${MAX_LIST_ENTRIES} (by name) of the ${MAX_LIST_SCAN} read; use search or a narrower path`,
      );
    } else if (names.length > MAX_LIST_ENTRIES) {
      lines.push(
        `… ${names.length - MAX_LIST_ENTRIES} more entries (list_files shows ${MAX_LIST_ENTRIES}); use search or a narrower path`,
      );
    }
    return lines.join('\n');
  },
};
