import { execFileSync } from 'node:child_process';

/** A test's own git (never the worker's): `git <args>` in `cwd` as user t, unsigned; its stdout, trimmed. */
export const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim();
