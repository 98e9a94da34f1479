import { constants } from 'node:fs';
import { open, opendir, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { workerProtectedPaths } from '../sandbox/protected';
import { isProtected, resolveInsideAsync } from './confine';
import { capHead } from './output';
import { FD_PATH, openFolderNoFollow, underFd } from './no-follow';
import { LineMatcher, MAX_MATCH_LINE_CHARS } from './search-matcher';
import { formatBytes, looksBinary, MAX_READ_BYTES, readRegularFile, Slicer, statPath } from './text-files';
import { ToolError, type Tool } from './types';

export { MAX_MATCH_LINE_CHARS };

/** Most matches `search` lists before it only counts the rest. */
export const MAX_SEARCH_MATCHES = 200;
/** Most files one search reads. */
export const MAX_SEARCH_FILES = 20_000;
/** Most bytes one search reads, all files together. */
export const MAX_SEARCH_BYTES = 32 * 1024 * 1024;
/** Most directory entries one search reads while it walks. */
export const MAX_SEARCH_ENTRIES = 100_000;
/** Largest compiled pattern (RE2 program instructions) search accepts. */
export const MAX_PATTERN_PROGRAM = 500;
const MAX_PATTERN_CHARS = 1000;
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

const SearchInputSchema = z.object({
  pattern: z
    .string()
    .min(1)
    .max(MAX_PATTERN_CHARS)
    .describe(
      'RE2 regular expression, matched against each line; no backreferences or lookaround; (?i) for case-insensitive',
    ),
  path: z
    .string()
    .min(1)
    .optional()
    .describe('Directory or file to search, relative to the workspace root; default "."'),
});
/** Input of `search`. */
export type SearchInput = z.infer<typeof SearchInputSchema>;

function compile(pattern: string): void {
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(pattern);
  } catch (err) {
    throw new ToolError(
      `invalid regular expression ${pattern}: ${(err as Error).message} (search uses RE2 syntax: no backreferences, lookahead or lookbehind)`,
    );
  }
  if (regex.programSize() > MAX_PATTERN_PROGRAM) {
    throw new ToolError(
      `regular expression ${pattern.length > 100 ? `${pattern.slice(0, 100)}…` : pattern} is too complex ` +
        `(${regex.programSize()} RE2 instructions, the limit is ${MAX_PATTERN_PROGRAM}): use smaller repetition counts or a shorter pattern`,
    );
  }
}

/** What one search has used of its bounds, and the first bound it hit. */
interface Budget {
  files: number;
  bytes: number;
  entries: number;
  stopped?: string;
  skippedLarge: number;
  cutLines: number;
}

type Entry = { name: string; isDir: boolean; isFile: boolean };

/** A regular file found by {@link walk}: its path, and the same relative to its open folder (to open it by). */
interface Found {
  file: string;
  via: string;
}

/**
 * Regular files under `abs` in a stable order (sorted by name, depth first), not following
 * symlinks, skipping .git, node_modules and the worker's own files (LOOPWRIGHT_HOME and the
 * like, when they lie inside the workspace `root`). Async and iterative (no recursion, so a deep tree
 * cannot overflow the stack); stops reading directories once the entry budget is spent. Each
 * folder is held open while its entries are visited, and a subfolder or file is opened relative
 * to it (no-follow.ts): a folder swapped for a symlink meanwhile is not followed out of the workspace.
 */
async function* walk(abs: string, root: string, budget: Budget, slicer: Slicer): AsyncGenerator<Found> {
  const guarded = workerProtectedPaths();
  const stack: Array<{ dir: string; entries: Entry[]; handle: FileHandle }> = [];
  const push = async (dir: string, parent?: FileHandle): Promise<void> => {
    const entries: Entry[] = [];
    let handle: FileHandle | undefined;
    try {
      handle = parent
        ? await open(
            underFd(parent, path.basename(dir)),
            constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
          )
        : await openFolderNoFollow(dir);
      for await (const entry of await opendir(`${FD_PATH}${handle.fd}`, { bufferSize: 256 })) {
        if (budget.entries >= MAX_SEARCH_ENTRIES) {
          budget.stopped ??= `after ${MAX_SEARCH_ENTRIES} directory entries (the most one search walks)`;
          break;
        }
        budget.entries += 1;
        entries.push({ name: entry.name, isDir: entry.isDirectory(), isFile: entry.isFile() });
        if (slicer.due()) await slicer.pause();
      }
    } catch (err) {
      await handle?.close();
      if (slicer.aborted) throw err;
      return; // unreadable or gone: skipped
    }
    entries.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0)); // reversed: popped from the end
    stack.push({ dir, entries, handle });
  };
  try {
    await push(abs);
    while (stack.length > 0) {
      const top = stack.at(-1);
      if (!top) break; // the loop runs while the stack is not empty
      const entry = top.entries.pop();
      if (!entry) await stack.pop()?.handle.close();
      else if (entry.isDir && !SKIPPED_DIRS.has(entry.name)) {
        // No symlink is followed, so the joined path is the real one: the worker's own files are skipped.
        const dir = path.join(top.dir, entry.name);
        if (!budget.stopped && !isProtected(root, dir, guarded)) await push(dir, top.handle);
      } else if (entry.isFile) yield { file: path.join(top.dir, entry.name), via: underFd(top.handle, entry.name) };
    }
  } finally {
    for (const frame of stack) await frame.handle.close();
  }
}

function notesOf(budget: Budget): string[] {
  const notes: string[] = [];
  if (budget.stopped) notes.push(`[search stopped early, ${budget.stopped}: search a narrower path for the rest]`);
  if (budget.skippedLarge > 0)
    notes.push(`[skipped ${budget.skippedLarge} file(s) over ${formatBytes(MAX_READ_BYTES)}]`);
  if (budget.cutLines > 0) {
    notes.push(
      `[${budget.cutLines} line(s) longer than ${MAX_MATCH_LINE_CHARS} characters were matched only in their first ${MAX_MATCH_LINE_CHARS}]`,
    );
  }
  return notes;
}

/**
 * `search { pattern, path? }`: the lines of text files under `path` that match an RE2
 * regular expression (linear-time matching: no pattern can make it backtrack), as
 * `file:line: text` (paths relative to the root). Skips .git, node_modules, symlinks,
 * FIFOs and other non-regular files, binary files and files over 2 MB; lists at most 200
 * matches, then counts the rest; the match lines are capped at `ctx.outputCapChars`.
 * Its work is bounded (MAX_SEARCH_FILES, MAX_SEARCH_BYTES, MAX_SEARCH_ENTRIES, lines matched
 * in their first MAX_MATCH_LINE_CHARS, patterns up to MAX_PATTERN_PROGRAM instructions) and
 * a note at the end says which bound was hit. Files are read with async fs on the main
 * thread and matched in a worker thread, which the call's signal (deadline, cancellation)
 * terminates. An invalid or too complex pattern, or a `path` that is not a directory or a
 * regular file, is a ToolError.
 */
export const searchTool: Tool<SearchInput> = {
  name: 'search',
  description:
    'Search text files for a regular expression, line by line, recursively under a path ' +
    '(default: the whole workspace). The syntax is RE2 (like JavaScript regular expressions without ' +
    'backreferences, lookahead or lookbehind; use (?i) for case-insensitive); an invalid pattern is ' +
    'returned as an error. Returns "file:line: text" lines, at most 200 matches. ' +
    'Skips .git, node_modules, binary files and files over 2 MB; one search reads at most ' +
    `${MAX_SEARCH_FILES} files and ${formatBytes(MAX_SEARCH_BYTES)}.`,
  class: 'read',
  input: SearchInputSchema,
  async run(input, ctx) {
    compile(input.pattern);
    const shown = input.path ?? '.';
    const start = await resolveInsideAsync(ctx.root, shown);
    const realRoot = await realpath(ctx.root);
    const isDir = (await statPath(start, shown)).isDirectory();
    const slicer = new Slicer(ctx);
    const budget: Budget = { files: 0, bytes: 0, entries: 0, skippedLarge: 0, cutLines: 0 };
    const lines: string[] = [];
    let matches = 0;
    const matcher = new LineMatcher(input.pattern, ctx.signal);
    try {
      for await (const { file, via } of isDir ? walk(start, realRoot, budget, slicer) : [{ file: start, via: start }]) {
        if (slicer.due()) await slicer.pause();
        ctx.signal?.throwIfAborted();
        if (budget.files >= MAX_SEARCH_FILES) {
          budget.stopped ??= `after ${MAX_SEARCH_FILES} files (the most one search reads)`;
          break;
        }
        let bytes: Buffer | null;
        try {
          // Refuses (the one file asked for) or skips (in a walk) FIFOs, sockets, devices.
          ({ bytes } = await readRegularFile(via, shown));
        } catch (err) {
          if (!isDir) throw err;
          ctx.signal?.throwIfAborted();
          continue;
        }
        budget.files += 1;
        if (bytes === null) {
          budget.skippedLarge += 1;
          continue;
        }
        if (budget.bytes + bytes.length > MAX_SEARCH_BYTES) {
          budget.stopped ??= `after ${formatBytes(budget.bytes)} (one search reads at most ${formatBytes(MAX_SEARCH_BYTES)})`;
          break;
        }
        budget.bytes += bytes.length;
        if (looksBinary(bytes)) continue;
        const found = await matcher.match(
          path.relative(realRoot, file) || '.',
          bytes,
          Math.max(0, MAX_SEARCH_MATCHES - lines.length),
        );
        matches += found.matches;
        budget.cutLines += found.cutLines;
        lines.push(...found.shown);
      }
    } finally {
      await matcher.close();
    }
    const notes = notesOf(budget);
    if (matches === 0) return [`no matches for /${input.pattern}/ under ${shown}`, ...notes].join('\n');
    if (matches > MAX_SEARCH_MATCHES) lines.push(`… ${matches - MAX_SEARCH_MATCHES} more`);
    return [capHead(lines.join('\n'), ctx.outputCapChars), ...notes].join('\n');
  },
};
