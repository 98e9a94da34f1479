import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { relativeTo, resolveInside } from './confine';
import { capHead } from './output';
import { fsToolError, looksBinary, MAX_READ_BYTES, statPath } from './text-files';
import { ToolError, type Tool, type ToolContext } from './types';

/** Most matches `search` lists before it only counts the rest. */
export const MAX_SEARCH_MATCHES = 200;
const MAX_LINE_CHARS = 300;
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

const SearchInputSchema = z.object({
  pattern: z.string().min(1).describe('JavaScript regular expression, matched against each line (no flags)'),
  path: z.string().min(1).optional().describe('Directory or file to search, relative to the workspace root; default "."'),
});
/** Input of `search`. */
export type SearchInput = z.infer<typeof SearchInputSchema>;

/** Files under `abs` in a stable order, not following symlinks, skipping .git and node_modules. */
function* walk(abs: string, ctx: ToolContext): Generator<string> {
  let entries;
  try {
    entries = readdirSync(abs, { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    ctx.signal?.throwIfAborted();
    const child = path.join(abs, entry.name);
    if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) yield* walk(child, ctx);
    else if (entry.isFile()) yield child;
  }
}

/**
 * `search { pattern, path? }`: the lines of text files under `path` that match a JavaScript
 * RegExp, as `file:line: text` (paths relative to the root). Skips .git, node_modules,
 * symlinks, binary files and files over 2 MB; lists at most 200 matches, then counts the
 * rest; the output is capped at `ctx.outputCapChars`.
 */
export const searchTool: Tool<SearchInput> = {
  name: 'search',
  description:
    'Search text files for a JavaScript regular expression, line by line, recursively under a path ' +
    '(default: the whole workspace). Returns "file:line: text" lines, at most 200 matches. ' +
    'Skips .git, node_modules and binary files.',
  class: 'read',
  input: SearchInputSchema,
  async run(input, ctx) {
    let regex: RegExp;
    try {
      regex = new RegExp(input.pattern);
    } catch (err) {
      throw new ToolError(`invalid regular expression ${input.pattern}: ${(err as Error).message}`);
    }
    const shown = input.path ?? '.';
    const start = resolveInside(ctx.root, shown);
    const files = statPath(start, shown).isDirectory() ? walk(start, ctx) : [start];
    const lines: string[] = [];
    let matches = 0;
    let scanned = 0;
    for (const file of files) {
      if (++scanned % 200 === 0) ctx.heartbeat?.();
      let bytes: Buffer;
      try {
        if (statSync(file).size > MAX_READ_BYTES) continue;
        bytes = readFileSync(file);
      } catch (err) {
        if (file === start) throw fsToolError(err, shown);
        continue;
      }
      if (looksBinary(bytes)) continue;
      const rel = relativeTo(ctx.root, file);
      bytes.toString('utf8').split('\n').forEach((line, i) => {
        if (!regex.test(line)) return;
        matches += 1;
        if (matches > MAX_SEARCH_MATCHES) return;
        const text = line.replace(/\r$/, '');
        lines.push(`${rel}:${i + 1}: ${text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…` : text}`);
      });
    }
    if (matches === 0) return `no matches for /${input.pattern}/ under ${shown}`;
    if (matches > MAX_SEARCH_MATCHES) lines.push(`… ${matches - MAX_SEARCH_MATCHES} more`);
    return capHead(lines.join('\n'), ctx.outputCapChars);
  },
};
