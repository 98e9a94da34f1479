import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reportCommand } from '../../client/commands/report';
import { KeyMissingError, newKey, parseKeyFile } from '../../crypto/keyring';
import { readReportFile, reportRing } from '../../activities/report-file';
import { writeReport, type WriteReportInput } from '../../activities/reports';

/**
 * With a key ring, reports written outside the run's workspace (the worker's own folders) are
 * sealed, `<name>.md.enc`; reports inside the workspace (the L1 deliverable) stay plaintext.
 */
const MARKER = 'TULIP-report-secret-5521';
const K1 = newKey();
const K2 = newKey();
const old = () => parseKeyFile(`k1=${K1}`, 'keys.txt');
const rotated = () => parseKeyFile(`k1=${K1}\nk2=${K2}\ncurrent=k2`, 'keys.txt');

let dir: string;
let ws: string;
let outside: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-sealed-reports-'));
  ws = path.join(dir, 'ws');
  outside = path.join(dir, 'home', 'reports');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const report = (over: Partial<WriteReportInput> = {}): WriteReportInput => ({
  key: 'run/report/1',
  dir: outside,
  item: 'item-1',
  title: `Item 1 ${MARKER}`,
  markdown: `found ${MARKER}`,
  workflowId: 'run',
  workspace: ws,
  ...over,
});

const anyPlain = (folder: string) =>
  readdirSync(folder).some((f) => readFileSync(path.join(folder, f)).includes(Buffer.from(MARKER)));

test('a report outside the workspace is sealed with its index, and opens with the ring', () => {
  const written = writeReport(report(), old());
  expect(written.path).toBe(path.join(outside, 'item-1.md.enc'));
  expect(readdirSync(outside).sort()).toEqual(['index.md.enc', 'item-1.md.enc']);
  expect(readFileSync(written.path).subarray(0, 14).toString()).toBe('lwsealed:1:k1\n');
  expect(anyPlain(outside)).toBe(false);
  expect(readReportFile(written.path, old())).toContain(`found ${MARKER}`);
  expect(readReportFile(path.join(outside, 'index.md.enc'), old())).toContain(
    `- [Item 1 ${MARKER}](item-1.md.enc) (run \`run\`)`,
  );
});

test('writing the same sealed report again is alreadyApplied (its plaintext is compared)', () => {
  writeReport(report(), old());
  expect(writeReport(report(), old()).alreadyApplied).toBe(true);
  expect(writeReport(report({ markdown: 'changed' }), old()).alreadyApplied).toBe(false);
});

test('a report inside the workspace stays plaintext (the deliverable), even with a ring', () => {
  const inside = path.join(ws, '.loopwright', 'reports');
  const written = writeReport(report({ dir: inside }), old());
  expect(written.path).toBe(path.join(inside, 'item-1.md'));
  expect(readFileSync(written.path, 'utf8')).toContain(`found ${MARKER}`);
  expect(readdirSync(inside).sort()).toEqual(['index.md', 'item-1.md']);
  expect(reportRing(old(), inside, ws)).toBeUndefined();
  expect(reportRing(old(), outside, undefined)).toBeDefined();
  expect(reportRing(undefined, outside, ws)).toBeUndefined();
});

test('without a ring, reports outside the workspace are written exactly as before', () => {
  const written = writeReport(report());
  expect(written.path).toBe(path.join(outside, 'item-1.md'));
  expect(readdirSync(outside).sort()).toEqual(['index.md', 'item-1.md']);
});

test('a sealed report replaces a plaintext one of the same name written before the ring', () => {
  writeReport(report());
  writeReport(report(), old());
  expect(readdirSync(outside).sort()).toEqual(['index.md.enc', 'item-1.md.enc']);
  expect(anyPlain(outside)).toBe(false);
});

test('a plaintext index lists a sealed report by file name only', () => {
  writeReport(report(), old());
  writeReport(report({ item: 'item-2', title: 'Two', markdown: 'two' }));
  const index = readFileSync(path.join(outside, 'index.md'), 'utf8');
  expect(index).toContain('- [item-1.md.enc](item-1.md.enc)');
  expect(index).not.toContain(MARKER);
});

test('after a rotation old reports still open; a new one uses the new key', () => {
  const before = writeReport(report(), old()).path;
  const after = writeReport(report({ item: 'item-2' }), rotated()).path;
  expect(readFileSync(after).subarray(0, 14).toString()).toBe('lwsealed:1:k2\n');
  expect(readReportFile(before, rotated())).toContain(`found ${MARKER}`);
  // the rotated index still reads the old report's title
  expect(readReportFile(path.join(outside, 'index.md.enc'), rotated())).toContain(`Item 1 ${MARKER}`);
});

test('a sealed report whose key is missing fails with the KeyMissingError naming the key', () => {
  const file = writeReport(report(), old()).path;
  expect(() => readReportFile(file, parseKeyFile(`k2=${K2}`, 'keys.txt'))).toThrow(KeyMissingError);
  expect(() => readReportFile(file, undefined)).toThrow(
    /^key k1 is not in the key ring \(none: LOOPWRIGHT_KEYS is not set in this process\)/,
  );
});

test('a sealed report moved under another name does not open', () => {
  const file = writeReport(report(), old()).path;
  renameSync(file, path.join(outside, 'other.md.enc'));
  expect(() => readReportFile(path.join(outside, 'other.md.enc'), old())).toThrow(
    /does not open: ciphertext under key k1 does not authenticate/,
  );
});

test('`loopwright report` prints a sealed report with the ring LOOPWRIGHT_KEYS names, and a plaintext one as it is', async () => {
  const file = writeReport(report(), old()).path;
  writeFileSync(path.join(dir, 'keys'), `k1=${K1}\n`);
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: () => undefined };
  expect(await reportCommand(file, { LOOPWRIGHT_KEYS: path.join(dir, 'keys') }, io)).toBe(0);
  expect(lines.join('\n')).toContain(`# Item 1 ${MARKER}`);
  const plain = writeReport(report({ dir: path.join(ws, 'r') })).path;
  expect(await reportCommand(plain, {}, io)).toBe(0);
  await expect(reportCommand(path.join(dir, 'nothing.md'), {}, io)).rejects.toThrow(/is not a report file/);
  expect(existsSync(file)).toBe(true);
});
