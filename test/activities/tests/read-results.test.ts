import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TestResultsError } from '../../../activities/tests/limits';
import { readResultsFile } from '../../../activities/tests/read-results';

/** A results folder is writable by the sandboxed command: what it leaves there is read with care. */
let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-read-results-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readResultsFile', () => {
  test('reads a regular file; a missing one is no results, not an error', async () => {
    writeFileSync(path.join(dir, 'r.json'), '{"ok":1}');
    await expect(readResultsFile(path.join(dir, 'r.json'))).resolves.toBe('{"ok":1}');
    await expect(readResultsFile(path.join(dir, 'none.json'))).resolves.toBeUndefined();
  });

  test('a symlink swapped in for the report (to a worker file) is refused, not followed', async () => {
    writeFileSync(path.join(dir, 'secret'), 'worker secret');
    symlinkSync(path.join(dir, 'secret'), path.join(dir, 'r.json'));
    await expect(readResultsFile(path.join(dir, 'r.json'))).rejects.toThrow(
      /r\.json is a symlink, not the runner's report: refused/,
    );
  });

  test('a FIFO is refused at once instead of blocking the worker', async () => {
    execFileSync('mkfifo', [path.join(dir, 'r.json')]);
    await expect(readResultsFile(path.join(dir, 'r.json'))).rejects.toThrow(/not a regular file/);
  });

  test('a report over the cap is refused with its size; one older than the run is stale and skipped', async () => {
    writeFileSync(path.join(dir, 'big.json'), 'x'.repeat(2000));
    await expect(readResultsFile(path.join(dir, 'big.json'), 1000)).rejects.toThrow(
      new TestResultsError('big.json has 2000 bytes, more than the 1000 read'),
    );
    const old = new Date(Date.now() - 60_000);
    utimesSync(path.join(dir, 'big.json'), old, old);
    await expect(readResultsFile(path.join(dir, 'big.json'), 5000, Date.now() - 1000)).resolves.toBeUndefined();
  });
});
