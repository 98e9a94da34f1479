import path from 'node:path';
import { LoopwrightError } from '../../common/errors';

/**
 * Bounds of the test-results layer. What a runner writes comes from a process that ran code the
 * agent wrote: it is read like any other untrusted input, capped before it is parsed.
 */
export const LIMITS = {
  /** Results kept from one run; more are dropped and the run says so. */
  results: 50_000,
  /** Bytes read from one results file (a jest JSON, a JUnit XML, node's or go's events). */
  fileBytes: 64 * 1024 * 1024,
  /** JUnit XML files read from a `junitPath` folder, and their bytes in all. */
  junitFiles: 2_000,
  junitBytes: 256 * 1024 * 1024,
  /** Folder levels searched below a `junitPath` folder. */
  junitDepth: 6,
  /** Characters kept of a test's name and of its failure message. */
  name: 2_000,
  message: 2_000,
  /** Characters kept of what the command printed (head and tail). */
  output: 200_000,
} as const;

/** A runner's results that cannot be read (not JSON, not XML, too large, a DOCTYPE). */
export class TestResultsError extends LoopwrightError {}

// ANSI colour and cursor sequences, which runners print even into messages.
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** A name or message as kept: no colour codes, at most `cap` characters. */
export function clip(text: string, cap: number = LIMITS.message): string {
  const plain = text.replace(ANSI, '');
  return plain.length > cap ? `${plain.slice(0, cap)}…` : plain;
}

/**
 * A file as a runner reported it, relative to the workspace with `/` separators: absolute paths
 * inside the workspace (the sandbox shows the workspace at its host path) and `file://` URLs
 * become relative; relative paths are normalized; an absolute path elsewhere is kept as it is.
 */
export function relativeFile(file: string, workspace: string): string {
  let f = file;
  if (f.startsWith('file://')) {
    try {
      f = decodeURIComponent(new URL(f).pathname);
    } catch {
      return clip(f, LIMITS.name);
    }
  }
  if (path.isAbsolute(f)) {
    const rel = path.relative(workspace, f);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return clip(f, LIMITS.name);
    f = rel;
  }
  return clip(path.posix.normalize(f.split(path.sep).join('/')).replace(/^(\.\/)+/, ''), LIMITS.name);
}

/** A positive integer line, or undefined. */
export function lineOf(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}
