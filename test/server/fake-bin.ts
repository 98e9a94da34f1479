import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';

/** Writes an executable shell script `dir/name` with `body` and returns its path. */
export function writeScript(dir: string, name: string, body: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A fake `temporal` that answers `--version` like the real one. */
export function fakeCli(dir: string, version = '1.9.1', name = 'temporal'): string {
  return writeScript(dir, name, `echo "temporal version ${version} (Server 1.32.0, UI 2.54.1)"`);
}

/** A fake `temporal-test-server` that prints its usage on stderr, like the real one. */
export function fakeTestServer(dir: string, name = 'temporal-test-server'): string {
  return writeScript(dir, name, 'echo "Usage: <command> <port> <flags>" >&2');
}

/** A fresh temp folder; remove it with `rmSync(dir, { recursive: true, force: true })`. */
export function tempDir(prefix = 'loopwright-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Removes a temp folder made by {@link tempDir}. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
