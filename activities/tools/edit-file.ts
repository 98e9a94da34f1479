import { createHash } from 'node:crypto';
import { z } from 'zod';
import { resolveInsideAsync } from './confine';
import { checkWriteSize, readTextFile, Slicer, writeTextFile } from './text-files';
import { ToolError, type Tool, type ToolContext } from './types';

const EditFileInputSchema = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root'),
  old_text: z.string().min(1).describe('Exact text to replace; it must occur exactly once in the file'),
  new_text: z.string().describe('Text to put in its place'),
});
/** Input of `edit_file`. */
export type EditFileInput = z.infer<typeof EditFileInputSchema>;

/** Most occurrences edit_file counts for its "occurs N times" error. */
const MAX_COUNTED = 1000;

/**
 * Where `needle` first occurs in `haystack` and how often it occurs (at most MAX_COUNTED).
 * Uniqueness is decided on overlapping occurrences (the second search starts one past the
 * first); the rest are counted without overlap, so the work stays about linear in the file
 * even for a long, repetitive needle (`aaaa…` in `aaaa…` would otherwise match at every offset).
 */
async function findOnce(haystack: string, needle: string, ctx: ToolContext): Promise<{ at: number; count: number }> {
  const at = haystack.indexOf(needle);
  if (at === -1) return { at, count: 0 };
  let next = haystack.indexOf(needle, at + 1);
  let count = 1;
  const slicer = new Slicer(ctx);
  while (next !== -1 && count < MAX_COUNTED) {
    count += 1;
    next = haystack.indexOf(needle, next + needle.length);
    if (slicer.due()) await slicer.pause();
  }
  return { at, count };
}

/** What an edit meant to do, recorded before the file is written: the file's hash before and after, and the answer. */
interface EditIntent {
  before: string;
  after: string;
  result: string;
}

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

function lineCount(text: string): number {
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines += 1;
  return lines;
}

/**
 * `edit_file { path, old_text, new_text }`: replaces the one exact occurrence of `old_text`.
 * None, or more than one, is a ToolError that tells the model what to change; so is a
 * result over MAX_WRITE_BYTES (2 MB) and a path that is not a regular text file (FIFOs are
 * refused without waiting). Idempotent: with the call's key (see ToolContext.idempotency) the
 * intent is recorded before the file is written, so a retry after a lost worker that finds the
 * edit applied answers as the first try did, and one that finds it not applied applies it.
 */
export const editFileTool: Tool<EditFileInput> = {
  name: 'edit_file',
  description:
    'Replace an exact piece of text in a workspace file. old_text must match the file exactly ' +
    '(whitespace included) and occur exactly once; include surrounding lines to make it unique. ' +
    'The edited file may be at most 2 MB.',
  class: 'write',
  input: EditFileInputSchema,
  async run(input, ctx) {
    const abs = await resolveInsideAsync(ctx.root, input.path, { forWrite: true });
    const text = await readTextFile(abs, input.path);
    const ledger = ctx.idempotency?.ledger;
    const intentKey = ctx.idempotency ? `${ctx.idempotency.key}#edit` : '';
    const intent = ledger ? await ledger.get<EditIntent>(intentKey) : undefined;
    if (intent) {
      const now = hashOf(text);
      if (now === intent.after) return intent.result;
      if (now !== intent.before)
        throw new ToolError(`${input.path} changed while this edit was being retried: read it again and redo the edit`);
    }
    const { at, count } = await findOnce(text, input.old_text, ctx);
    if (count === 0)
      throw new ToolError(`old_text not found in ${input.path}: read the file and copy the text exactly`);
    if (count > 1) {
      const times = count >= MAX_COUNTED ? `${MAX_COUNTED} or more` : String(count);
      throw new ToolError(`old_text occurs ${times} times in ${input.path}: give more context`);
    }
    const bytes =
      Buffer.byteLength(text, 'utf8') -
      Buffer.byteLength(input.old_text, 'utf8') +
      Buffer.byteLength(input.new_text, 'utf8');
    checkWriteSize(bytes, `the edited ${input.path}`);
    // Sliced, not String.replace: `$&` and friends in new_text must stay literal.
    const next = text.slice(0, at) + input.new_text + text.slice(at + input.old_text.length);
    // A call stopped at its deadline (or cancelled) must not write afterwards.
    ctx.signal?.throwIfAborted();
    const result = `edited ${input.path} at line ${lineCount(text.slice(0, at))}: replaced ${lineCount(input.old_text)} line(s) with ${lineCount(input.new_text)}`;
    if (ledger) await ledger.put(intentKey, { before: hashOf(text), after: hashOf(next), result } satisfies EditIntent);
    await writeTextFile(abs, input.path, next);
    return result;
  },
};
