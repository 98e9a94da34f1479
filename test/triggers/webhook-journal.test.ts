import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReplayJournal, webhookJournalPath, type SeenEntry } from '../../client/commands/webhook-journal';
import { ConfigError } from '../../common/errors';

/** The webhook receiver's replay memory on disk (`<LOOPWRIGHT_HOME>/webhooks/seen.jsonl`), without a server. */
let home: string;
let path: string;
let journal: ReplayJournal | undefined;
const DAY = 24 * 3_600_000;
const OPTS = { windowMs: DAY, maxLines: 4 };
const DIGEST = 'ab'.repeat(32);

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'webhook-journal-'));
  path = webhookJournalPath({ LOOPWRIGHT_HOME: home });
});

afterEach(async () => {
  await journal?.close();
  journal = undefined;
  rmSync(home, { recursive: true, force: true });
});

const lineAt = (at: number, rest: Record<string, string>) =>
  `${JSON.stringify({ at: new Date(at).toISOString(), ...rest })}\n`;
const none = (): SeenEntry[] => [];

test('lives at <LOOPWRIGHT_HOME>/webhooks/seen.jsonl', () => {
  expect(path).toBe(join(home, 'webhooks', 'seen.jsonl'));
});

test('what was recorded is loaded by the next open, with mode 0600, holding the body hash and never anything else', async () => {
  journal = await ReplayJournal.open(path, OPTS);
  expect(journal.loaded).toEqual([]);
  const at = Date.now();
  await journal.record({ at, delivery: 'd-1', body: DIGEST, loop: 'fix-test' }, none);
  await journal.close();
  journal = await ReplayJournal.open(path, OPTS);
  expect(journal.loaded).toEqual([{ at, delivery: 'd-1', body: DIGEST, loop: 'fix-test' }]);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(Object.keys(JSON.parse(readFileSync(path, 'utf8').trim()) as object).sort()).toEqual([
    'at',
    'body',
    'delivery',
    'loop',
  ]);
});

test('a torn last line (a crash mid-write) is ignored and dropped from the file; the lines before it are kept', async () => {
  mkdirSync(join(home, 'webhooks'));
  writeFileSync(path, lineAt(Date.now(), { delivery: 'kept' }) + '{"at":"2026-12-04T20:0');
  journal = await ReplayJournal.open(path, OPTS);
  expect(journal.loaded.map((e) => e.delivery)).toEqual(['kept']);
  await journal.record({ at: Date.now(), delivery: 'next' }, none);
  expect(
    readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as SeenEntry).delivery),
  ).toEqual(['kept', 'next']);
});

test('entries older than the window are forgotten at open and rewritten away', async () => {
  mkdirSync(join(home, 'webhooks'));
  writeFileSync(path, lineAt(Date.now() - DAY - 1_000, { delivery: 'old' }) + lineAt(Date.now(), { delivery: 'new' }));
  journal = await ReplayJournal.open(path, OPTS);
  expect(journal.loaded.map((e) => e.delivery)).toEqual(['new']);
  expect(readFileSync(path, 'utf8')).not.toContain('old');
});

test('past twice maxLines lines the file is rewritten from what the receiver still remembers', async () => {
  journal = await ReplayJournal.open(path, OPTS);
  const live = [{ at: Date.now(), delivery: 'live' }];
  for (let i = 0; i < 9; i++) await journal.record({ at: Date.now(), delivery: `d-${i}` }, () => live);
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain('"live"');
  expect(statSync(path).mode & 0o777).toBe(0o600);
  await journal.record({ at: Date.now(), delivery: 'after' }, () => live);
  expect(readFileSync(path, 'utf8')).toContain('"after"');
});

test('a line in the middle that is not a record is a ConfigError naming the line and the file', async () => {
  mkdirSync(join(home, 'webhooks'));
  writeFileSync(path, 'not json\n' + lineAt(Date.now(), { delivery: 'x' }));
  await expect(ReplayJournal.open(path, OPTS)).rejects.toThrow(
    new ConfigError(
      `line 1 of the webhook replay memory ${path} is not a delivery record: fix or delete that line (deleting the file forgets accepted deliveries: then rotate LOOPWRIGHT_WEBHOOK_SECRET)`,
    ),
  );
  // The failed open left no lock behind.
  expect(() => readFileSync(`${path}.lock`)).toThrow(/ENOENT/);
});

test('a file that cannot be read (here a folder) is a ConfigError (exit 2) naming the path and what to do', async () => {
  mkdirSync(path, { recursive: true });
  const err = await ReplayJournal.open(path, OPTS).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).exitCode).toBe(2);
  expect((err as Error).message).toBe(
    `cannot read the webhook replay memory ${path} (EISDIR): make it a file this user can read and write (mode 0600), or set LOOPWRIGHT_HOME to a folder it owns`,
  );
});

test('a second receiver on the same file is refused while the first process lives; a lock left by a dead one is taken over', async () => {
  mkdirSync(join(home, 'webhooks'));
  writeFileSync(`${path}.lock`, String(process.ppid));
  await expect(ReplayJournal.open(path, OPTS)).rejects.toThrow(
    `another loopwright webhooks (pid ${process.ppid}) keeps its replay memory in ${path}: stop it, or give this receiver its own LOOPWRIGHT_HOME`,
  );
  writeFileSync(`${path}.lock`, '999999999');
  journal = await ReplayJournal.open(path, OPTS);
  expect(readFileSync(`${path}.lock`, 'utf8')).toBe(String(process.pid));
  await journal.close();
  journal = undefined;
  expect(() => statSync(`${path}.lock`)).toThrow(/ENOENT/);
});
