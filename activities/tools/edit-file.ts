import { writeFileSync } from 'node:fs';
import { z } from 'zod';
import { resolveInside } from './confine';
import { fsToolError, readTextFile } from './text-files';
import { ToolError, type Tool } from './types';

const EditFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root'),
  old_text: z.string().min(1).describe('Exact text to replace; it must occur exactly once in the file'),
  new_text: z.string().describe('Text to put in its place'),
});
/** Input of `edit_file`. */
export type EditFileInput = z.infer<typeof EditFileInputSchema>;

/** Where `needle` occurs in `haystack`, overlapping occurrences included. */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) found.push(i);
  return found;
}

function lineCount(text: string): number {
  return text.split('\n').length;
}

/**
 * `edit_file { path, old_text, new_text }`: replaces the one exact occurrence of `old_text`.
 * None, or more than one, is a ToolError that tells the model what to change.
 */
export const editFileTool: Tool<EditFileInput> = {
  name: 'edit_file',
  description:
    'Replace an exact piece of text in a workspace file. old_text must match the file exactly ' +
    '(whitespace included) and occur exactly once; include surrounding lines to make it unique.',
  class: 'write',
  input: EditFileInputSchema,
  async run(input, ctx) {
    const abs = resolveInside(ctx.root, input.path, { forWrite: true });
    const text = readTextFile(abs, input.path);
    const found = occurrences(text, input.old_text);
    if (found.length === 0) throw new ToolError(`old_text not found in ${input.path}: read the file and copy the text exactly`);
    if (found.length > 1) {
      throw new ToolError(`old_text occurs ${found.length} times in ${input.path}: give more context`);
    }
    const at = found[0];
    // Sliced, not String.replace: `$&` and friends in new_text must stay literal.
    const next = text.slice(0, at) + input.new_text + text.slice(at + input.old_text.length);
    try {
      writeFileSync(abs, next, 'utf8');
    } catch (err) {
      throw fsToolError(err, input.path);
    }
    const line = lineCount(text.slice(0, at));
    return `edited ${input.path} at line ${line}: replaced ${lineCount(input.old_text)} line(s) with ${lineCount(input.new_text)}`;
  },
};
