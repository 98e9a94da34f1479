import { z } from 'zod';
import { resolveInside } from './confine';
import { readTextFile } from './text-files';
import type { Tool } from './types';

const ReadFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root, e.g. src/index.ts'),
});
/** Input of `read_file`. */
export type ReadFileInput = z.infer<typeof ReadFileInputSchema>;

/** `read_file { path }`: the UTF-8 text of one file in the workspace (text files up to 2 MB). */
export const readFileTool: Tool<ReadFileInput> = {
  name: 'read_file',
  description:
    'Read a UTF-8 text file in the workspace and return its full contents. ' +
    'The path is relative to the workspace root. Directories, binary files and files over 2 MB are refused.',
  class: 'read',
  input: ReadFileInputSchema,
  async run(input, ctx) {
    return readTextFile(resolveInside(ctx.root, input.path), input.path);
  },
};
