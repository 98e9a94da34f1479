import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeReport, type WriteReportInput } from '../../activities/reports';

/**
 * The worker writes reports (and trace reports) into folders inside the run's workspace, which
 * the agent and its commands write to. Whatever they planted there, the worker's writes stay in
 * the workspace and never block.
 */
let dir: string;
let ws: string;
let outside: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-reports-'));
  ws = path.join(dir, 'ws');
  outside = path.join(dir, 'outside');
  mkdirSync(ws);
  mkdirSync(outside);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const report = (over: Partial<WriteReportInput> = {}): WriteReportInput => ({
  key: 'run/report/1',
  dir: path.join(ws, '.loopwright', 'reports'),
  item: 'item-1',
  title: 'Item 1',
  markdown: 'the report',
  workflowId: 'run',
  workspace: ws,
  ...over,
});

test('a report folder that a symlink in the workspace leads outside is refused, and nothing is written there', () => {
  symlinkSync(outside, path.join(ws, '.loopwright'));
  expect(() => writeReport(report())).toThrow(/leads out of the workspace .* through a symlink: nothing was written/);
  expect(existsSync(path.join(outside, 'reports'))).toBe(false);
});

test('a folder the operator names outside the workspace is used as given', () => {
  const written = writeReport(report({ dir: path.join(outside, 'reports') }));
  expect(readFileSync(written.path, 'utf8')).toContain('the report');
});

test('a symlink planted at the report file or its temporary sibling is replaced, never followed', () => {
  const reports = path.join(ws, '.loopwright', 'reports');
  mkdirSync(reports, { recursive: true });
  const target = path.join(outside, 'target.txt');
  writeFileSync(target, 'untouched');
  symlinkSync(target, path.join(reports, 'item-1.md'));
  symlinkSync(target, path.join(reports, `index.md.${process.pid}.tmp`));
  writeReport(report());
  expect(readFileSync(target, 'utf8')).toBe('untouched');
  expect(lstatSync(path.join(reports, 'item-1.md')).isFile()).toBe(true);
  expect(readFileSync(path.join(reports, 'index.md'), 'utf8')).toContain('[Item 1](item-1.md)');
});

test('a FIFO named like a report does not block the index', () => {
  const reports = path.join(ws, '.loopwright', 'reports');
  mkdirSync(reports, { recursive: true });
  execFileSync('mkfifo', [path.join(reports, 'a-fifo.md')]);
  const written = writeReport(report());
  expect(readFileSync(path.join(reports, 'index.md'), 'utf8')).not.toContain('a-fifo');
  expect(written.alreadyApplied).toBe(false);
});

test('two items whose keys slug alike get two reports, both in the index; a discovered key keeps its own name', () => {
  const one = writeReport(report({ item: 'gh:issue/1', title: 'Issue one', markdown: 'first' }));
  const two = writeReport(report({ item: 'gh-issue-1', title: 'Issue one again', markdown: 'second' }));
  expect(one.path).not.toBe(two.path);
  expect(path.basename(two.path)).toBe('gh-issue-1.md');
  expect(path.basename(one.path)).toMatch(/^gh-issue-1_[0-9a-f]{16}\.md$/);
  expect(readFileSync(one.path, 'utf8')).toContain('first');
  expect(readFileSync(two.path, 'utf8')).toContain('second');
  const index = readFileSync(path.join(ws, '.loopwright', 'reports', 'index.md'), 'utf8');
  expect(index).toContain('[Issue one]');
  expect(index).toContain('[Issue one again]');
});
