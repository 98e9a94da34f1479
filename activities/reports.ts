import { lstatSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { KeyRing } from '../crypto/keyring';
import { redact } from '../common/redact';
import { processRedaction } from '../crypto/ring-redaction';
import { escapeBlock, escapeLine } from '../common/terminal';
import { fileKey } from '../common/file-key';
import { FailureType, nonRetryableFailure } from '../common/failure-types';
import {
  isWithin,
  MAX_REPORT_BYTES,
  reportFile,
  reportRing,
  SEALED_SUFFIX,
  tryReadReportFile,
  writeReportFile,
} from './report-file';

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
 * The most the index reads of the reports in all, about sixteen of the largest: past it the rest
 * are listed by file name only, so files planted in a report folder inside the workspace (any
 * number, sparse ones cost no disk) cannot hold the worker's thread.
 */
const INDEX_READ_BYTES = 16 * MAX_REPORT_BYTES;

export { readRegular, writeAtomic } from './report-file';

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
      throw nonRetryableFailure(
        FailureType.Report,
        `report folder ${dir} leads out of the workspace ${workspace} (to ${real}) through a symlink: nothing was written`,
      );
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

function sizeOf(p: string): number {
  try {
    return lstatSync(p).size;
  } catch {
    return 0;
  }
}

function lexists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * The report's Markdown, inert when printed or `cat`: the title, run and effect stay on their
 * lines (`escapeLine`), and the body keeps its Markdown with its control sequences escaped
 * (`escapeBlock`).
 */
function render(input: WriteReportInput): string {
  return [
    `# ${escapeLine(input.title)}`,
    '',
    `- run: \`${escapeLine(input.workflowId)}\``,
    `- effect: \`${escapeLine(input.key)}\``,
    '',
    escapeBlock(input.markdown.trim()),
    '',
  ].join('\n');
}

/**
 * `index.md`: one line per report in the folder, sorted by file name, with its title and run.
 * A sealed report's title and run are read only for a sealed index (`ring`): a plaintext index
 * lists it by file name, so it never shows what the report hides.
 */
function renderIndex(dir: string, ring: KeyRing | undefined): string {
  const lines = ['# Loopwright reports', ''];
  const isReport = (f: string) =>
    (f.endsWith('.md') || f.endsWith(`.md${SEALED_SUFFIX}`)) && f !== INDEX && f !== INDEX + SEALED_SUFFIX;
  let budget = INDEX_READ_BYTES;
  for (const file of readdirSync(dir).filter(isReport).sort()) {
    const sealed = file.endsWith(SEALED_SUFFIX);
    const size = sizeOf(path.join(dir, file));
    if (!(sealed && !ring) && size > Math.min(budget, MAX_REPORT_BYTES)) {
      lines.push(`- [${escapeLine(file)}](${escapeLine(file)}) (not read: over the index's reading limit)`);
      continue;
    }
    budget -= size;
    const text = sealed && !ring ? '' : tryReadReportFile(path.join(dir, file), ring);
    if (text === undefined) {
      if (sealed) lines.push(`- [${escapeLine(file)}](${escapeLine(file)}) (sealed; does not open with this key ring)`);
      continue;
    }
    const title = /^# (.*)$/m.exec(text)?.[1] ?? file;
    const run = /^- run: `(.*)`$/m.exec(text)?.[1];
    // Reports written before their titles were escaped may still hold control characters.
    lines.push(`- [${escapeLine(title)}](${escapeLine(file)})${run ? ` (run \`${escapeLine(run)}\`)` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes the report `<dir>/<fileKey(item)>.md` (common/file-key.ts: two items never share a file) and rewrites `<dir>/index.md`. Idempotent: the
 * report's content depends only on its input (no timestamps), so a retry or a repeated run
 * writes the same text and reports `alreadyApplied` when it was already there. With a key ring
 * and a folder outside the workspace, both are sealed (`.md.enc`, see report-file.ts).
 */
export function writeReport(input: WriteReportInput, keys?: KeyRing): WriteReportResult {
  reportDir(input.dir, input.workspace);
  const ring = reportRing(keys, input.dir, input.workspace);
  const name = `${fileKey(input.item)}.md`;
  const r = processRedaction(process.env, input.redact, keys);
  const text = render({ ...input, title: redact(input.title, r), markdown: redact(input.markdown, r) });
  const file = reportFile(input.dir, name, ring);
  const alreadyApplied = tryReadReportFile(file, ring) === text;
  if (!alreadyApplied) writeReportFile(input.dir, name, text, ring);
  writeReportFile(input.dir, INDEX, renderIndex(input.dir, ring), ring);
  return { path: file, alreadyApplied };
}
