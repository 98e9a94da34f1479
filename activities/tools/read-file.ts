import { z } from 'zod';
import { resolveInsideAsync } from './confine';
import { readTextFile } from './text-files';
import type { Tool } from './types';

const ReadFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root, e.g. src/index.ts'),
});
/** Input of `read_file`. */
export type ReadFileInput = z.infer<typeof ReadFileInputSchema>;

/**
 * `read_file { path }`: the UTF-8 text of one regular file in the workspace (text files up
 * to 2 MB). Directories, FIFOs, sockets, devices and binary files are refused with a
 * ToolError; nothing blocks the worker's thread (see text-files.ts).
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
    return readTextFile(await resolveInsideAsync(ctx.root, input.path), input.path);
  },
};
