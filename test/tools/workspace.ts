import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolContext } from '../../activities/tools/types';

/** A fresh temp directory; call the returned cleanup in afterEach. */
export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `loopwright-tools-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A ToolContext for `root` with test-friendly defaults. */
export function toolContext(root: string, overrides: Partial<ToolContext> = {}): ToolContext {
  return { root, allowedCommands: ['node'], commandTimeoutMs: 10_000, outputCapChars: 20_000, ...overrides };
}

/** Runs git in `cwd` with a local identity and no signing, whatever the machine's config says. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8' });
}

/** `git init -b main` in `dir` with a local user. */
export function gitInit(dir: string): void {
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'test@loopwright.dev');
  git(dir, 'config', 'user.name', 'Loopwright Test');
}

/** True when the process is gone (or only a zombie waiting to be reaped). */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** Waits up to `ms` for `pid` to be gone; true when it is. */
export async function waitGone(pid: number, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (processGone(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return processGone(pid);
}
