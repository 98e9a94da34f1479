import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolContext } from '../../../activities/tools/types';

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

/**
 * Pids of the host's processes whose command line is exactly `cmdline` (words joined by spaces).
 * Sandboxed commands have pids of their own namespace, so tests find what survived by name.
 */
export function processesNamed(cmdline: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (
        readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ') === cmdline &&
        !processGone(Number(entry))
      )
        found.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

/** Waits up to `ms` until no process named `cmdline` is left; true when none is. */
export async function waitNoneNamed(cmdline: string, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (processesNamed(cmdline).length === 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return processesNamed(cmdline).length === 0;
}
