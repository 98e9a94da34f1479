import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { redact, redactionFromEnv } from '../common/redact';
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
}

export interface WriteReportResult {
  path: string;
  alreadyApplied: boolean;
}

const INDEX = 'index.md';

/** Writes a file through a temporary sibling and a rename, so a reader never sees half of it. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

function render(input: WriteReportInput): string {
  return [`# ${input.title}`, '', `- run: \`${input.workflowId}\``, `- effect: \`${input.key}\``, '', input.markdown.trim(), ''].join('\n');
}

/** `index.md`: one line per report in the folder, sorted by file name, with its title and run. */
function renderIndex(dir: string): string {
  const lines = ['# Loopwright reports', ''];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.md') && f !== INDEX).sort()) {
    const text = readFileSync(path.join(dir, file), 'utf8');
    const title = /^# (.*)$/m.exec(text)?.[1] ?? file;
    const run = /^- run: `(.*)`$/m.exec(text)?.[1];
    lines.push(`- [${title}](${file})${run ? ` (run \`${run}\`)` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes the report `<dir>/<item slug>.md` and rewrites `<dir>/index.md`. Idempotent: the
 * report's content depends only on its input (no timestamps), so a retry or a repeated run
 * writes the same bytes and reports `alreadyApplied` when they were already there.
 */
export function writeReport(input: WriteReportInput): WriteReportResult {
  mkdirSync(input.dir, { recursive: true });
  const file = path.join(input.dir, `${testKey(input.item)}.md`);
  const r = redactionFromEnv(process.env, input.redact);
  const text = render({ ...input, title: redact(input.title, r), markdown: redact(input.markdown, r) });
  const alreadyApplied = existsSync(file) && readFileSync(file, 'utf8') === text;
  if (!alreadyApplied) writeAtomic(file, text);
  writeAtomic(path.join(input.dir, INDEX), renderIndex(input.dir));
  return { path: file, alreadyApplied };
}
