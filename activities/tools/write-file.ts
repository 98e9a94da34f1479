import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { resolveInside } from './confine';
import { fsToolError } from './text-files';
import type { Tool } from './types';

const WriteFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root; missing directories are created'),
  content: z.string().describe('The complete new contents of the file'),
});
/** Input of `write_file`. */
export type WriteFileInput = z.infer<typeof WriteFileInputSchema>;

/**
 * `write_file { path, content }`: creates or replaces a file in the workspace (parent
 * directories included); anything under `.git/` or outside the root is refused.
 */
export const writeFileTool: Tool<WriteFileInput> = {
  name: 'write_file',
  description:
    'Create or overwrite a text file in the workspace with the given content, creating missing ' +
    'parent directories. The path is relative to the workspace root; .git/ cannot be written. ' +
    'To change part of an existing file, prefer edit_file.',
  class: 'write',
  input: WriteFileInputSchema,
  async run(input, ctx) {
    const abs = resolveInside(ctx.root, input.path, { forWrite: true });
    try {
      // The part of `abs` that does not exist yet was checked to hold no symlinks.
      mkdirSync(path.dirname(abs), { recursive: true });
      writeFileSync(abs, input.content, 'utf8');
    } catch (err) {
      throw fsToolError(err, input.path);
    }
    return `wrote ${Buffer.byteLength(input.content, 'utf8')} bytes to ${input.path}`;
  },
};
