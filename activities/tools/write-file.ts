import path from 'node:path';
import { z } from 'zod';
import { resolveInsideAsync } from './confine';
import { openFolderNoFollow } from './no-follow';
import { checkWriteSize, fsToolError, writeTextFile } from './text-files';
import type { Tool } from './types';

const WriteFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root; missing directories are created'),
  content: z.string().describe('The complete new contents of the file (at most 2 MB)'),
});
/** Input of `write_file`. */
export type WriteFileInput = z.infer<typeof WriteFileInputSchema>;

/**
 * `write_file { path, content }`: creates or replaces a regular file in the workspace (parent
 * directories included). Refused with a ToolError: content over MAX_WRITE_BYTES (2 MB),
 * anything under `.git/` or outside the root, and a path that is not a regular file (a FIFO
 * is opened without waiting and never written).
 */
export const writeFileTool: Tool<WriteFileInput> = {
  name: 'write_file',
  description:
    'Create or overwrite a text file in the workspace with the given content (at most 2 MB), creating ' +
    'missing parent directories. The path is relative to the workspace root; .git/ cannot be written. ' +
    'To change part of an existing file, prefer edit_file.',
  class: 'write',
  input: WriteFileInputSchema,
  async run(input, ctx) {
    const bytes = Buffer.byteLength(input.content, 'utf8');
    checkWriteSize(bytes, `content for ${input.path}`);
    const abs = await resolveInsideAsync(ctx.root, input.path, { forWrite: true });
    try {
      // The part of `abs` that does not exist yet was checked to hold no symlinks; folders are
      // made without following one swapped in since (no-follow.ts).
      await (await openFolderNoFollow(path.dirname(abs), true)).close();
    } catch (err) {
      throw fsToolError(err, input.path);
    }
    // A call stopped at its deadline (or cancelled) must not write afterwards.
    ctx.signal?.throwIfAborted();
    await writeTextFile(abs, input.path, input.content);
    return `wrote ${bytes} bytes to ${input.path}`;
  },
};
