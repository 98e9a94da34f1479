import { ApplicationFailure } from '@temporalio/common';
import { closeSync, constants, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { redact, redactionFromEnv } from '../common/redact';
import { escapeBlock, escapeLine } from '../common/terminal';
import { testKey } from '../common/test-key';

/** Input of `writeReport`. */
export interface WriteReportInput {
  /** `<workflow id>/<effect name>/<sequence>`. */
  key: string;
  /** Absolute folder of the reports. */
  dir: string;
  /** The work item the report is about (its key); names the file. */
  item: string;
  title: string;
  markdown: string;
  workflowId: string;
  /** More names whose values are secrets (the run's LOOPWRIGHT_REDACT). */
  redact?: string[];
  /** The run's workspace: a report folder inside it must not lead out of it (see {@link reportDir}). */
  workspace?: string;
}

export interface WriteReportResult {
  path: string;
  alreadyApplied: boolean;
}

const INDEX = 'index.md';

/**
 * Writes a file through a temporary sibling and a rename, so a reader never sees half of it.
 * The sibling is created afresh (O_EXCL|O_NOFOLLOW), so a symlink planted in its place is not
 * followed; the rename replaces a symlink at `file` itself, never its target.
 */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** The text of `file` when it is a regular file (never a FIFO, a device or a symlink), else undefined. */
export function readRegular(file: string): string | undefined {
  try {
    return lstatSync(file).isFile() ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes the folder a run writes its reports or traces into. The workspace is the agent's (and
 * its commands'): when the folder lies inside it, it must still lie inside it once symlinks are
 * followed, or a planted `.loopwright -> /somewhere` would have the worker write elsewhere.
 * Refused with a non-retryable `ReportError`.
 */
export function reportDir(dir: string, workspace: string | undefined): string {
  const inside = workspace !== undefined && isWithin(path.resolve(workspace), path.resolve(dir));
  // Checked before anything is made (the deepest folder that exists) and again after.
  const check = (existing: string) => {
    const real = realpathSync(existing);
    if (!isWithin(realpathSync(workspace!), real)) {
      throw ApplicationFailure.create({ type: 'ReportError', nonRetryable: true, message: `report folder ${dir} leads out of the workspace ${workspace} (to ${real}) through a symlink: nothing was written` });
    }
  };
  if (inside) {
    let existing = path.resolve(dir);
    while (!lexists(existing)) existing = path.dirname(existing);
    check(existing);
  }
  mkdirSync(dir, { recursive: true });
  if (inside) check(dir);
  return dir;
}

function lexists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The report's Markdown, inert when printed or `cat`: the title, run and effect stay on their
 * lines (`escapeLine`), and the body keeps its Markdown with its control sequences escaped
 * (`escapeBlock`).
 */
function render(input: WriteReportInput): string {
  return [`# ${escapeLine(input.title)}`, '', `- run: \`${escapeLine(input.workflowId)}\``, `- effect: \`${escapeLine(input.key)}\``, '', escapeBlock(input.markdown.trim()), ''].join('\n');
}

/** `index.md`: one line per report in the folder, sorted by file name, with its title and run. */
function renderIndex(dir: string): string {
  const lines = ['# Loopwright reports', ''];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.md') && f !== INDEX).sort()) {
    const text = readRegular(path.join(dir, file));
    if (text === undefined) continue;
    const title = /^# (.*)$/m.exec(text)?.[1] ?? file;
    const run = /^- run: `(.*)`$/m.exec(text)?.[1];
    // Reports written before their titles were escaped may still hold control characters.
    lines.push(`- [${escapeLine(title)}](${escapeLine(file)})${run ? ` (run \`${escapeLine(run)}\`)` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes the report `<dir>/<item slug>.md` and rewrites `<dir>/index.md`. Idempotent: the
 * report's content depends only on its input (no timestamps), so a retry or a repeated run
 * writes the same bytes and reports `alreadyApplied` when they were already there.
 */
export function writeReport(input: WriteReportInput): WriteReportResult {
  reportDir(input.dir, input.workspace);
  const file = path.join(input.dir, `${testKey(input.item)}.md`);
  const r = redactionFromEnv(process.env, input.redact);
  const text = render({ ...input, title: redact(input.title, r), markdown: redact(input.markdown, r) });
  const alreadyApplied = readRegular(file) === text;
  if (!alreadyApplied) writeAtomic(file, text);
  writeAtomic(path.join(input.dir, INDEX), renderIndex(input.dir));
  return { path: file, alreadyApplied };
}
