import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { findBwrap } from '../sandbox/sandbox';

/**
 * The object stores a store borrows (its `info/alternates`, and theirs in turn, as git follows
 * them: relative entries against the store that names them), as real paths that exist. `objects`
 * itself is not among them. It follows 10 levels, more than git's 6, so that none git reads is missed.
 */
export function alternateChain(objects: string): string[] {
  const found: string[] = [];
  let self = objects;
  try {
    self = realpathSync(objects);
  } catch {
    // not there: it borrows nothing
  }
  const visit = (store: string, depth: number) => {
    if (depth > MAX_DEPTH) return;
    let text: string;
    try {
      text = readFileSync(path.join(store, 'info', 'alternates'), 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      const entry = line.trim();
      if (entry === '' || entry.startsWith('#')) continue;
      let real: string;
      try {
        real = realpathSync(path.resolve(store, entry));
      } catch {
        continue;
      }
      if (real === self || found.includes(real)) continue;
      found.push(real);
      visit(real, depth + 1);
    }
  };
  visit(objects, 1);
  return found;
}

const MAX_DEPTH = 10;

let probed: Promise<string | undefined> | undefined;

/**
 * The argv prefix that runs a command with `stores` mounted read-only over themselves (the rest
 * of the machine as it is), or [] when there is nothing to protect or no working bubblewrap.
 *
 * Why: git "freshens" an object it is asked to write that a store it borrows already holds (it
 * sets that loose file's or whole pack's mtime to now), and has no setting that turns it off. The
 * in-place checks hash the user's working tree through a private store that borrows the target's
 * (private-objects.ts), so every file whose content the target once held (a secret committed and
 * removed) would move an mtime in the target's store, which every L2 sandbox mounts: an oracle
 * for "the in-place working tree holds this content". On a read-only mount the freshening fails,
 * and git, finding no writable copy, writes its own into the private store, where the reads that
 * follow find it first.
 *
 * Without bubblewrap (`LOOPWRIGHT_SANDBOX=off`, or none that works here) commands run as they are:
 * then no L2 agent runs sandboxed commands either (they are refused, or run with the whole
 * machine in reach), so there is no sandbox for the mtimes to leak into.
 */
export async function readOnlyStoresArgv(stores: readonly string[]): Promise<string[]> {
  const present = [...new Set(stores)].filter((s) => existsSync(s));
  if (present.length === 0) return [];
  const bwrap = await (probed ??= probeBwrap());
  if (!bwrap) return [];
  return [bwrap, '--dev-bind', '/', '/', ...present.flatMap((s) => ['--ro-bind', s, s]), '--'];
}

/**
 * A bubblewrap that can remount the root as it is (one real run); undefined when the sandbox is
 * off or none works. The only process this module starts itself, once: bubblewrap running
 * `/bin/sh -c 'exit 0'`, nothing the agent wrote; the wrapper it returns runs only the worker's
 * own git (worker-git.ts: hooks, drivers and the repository's programs disabled).
 */
async function probeBwrap(env: Record<string, string | undefined> = process.env): Promise<string | undefined> {
  const mode = (env.LOOPWRIGHT_SANDBOX ?? '').trim().toLowerCase();
  if (mode === 'off' || mode === 'none') return undefined;
  const found = findBwrap({ bwrap: env.LOOPWRIGHT_BWRAP?.trim() || undefined, env });
  if (!('path' in found)) return undefined;
  return new Promise((resolve) => {
    execFile(
      found.path,
      ['--dev-bind', '/', '/', '--', '/bin/sh', '-c', 'exit 0'],
      { timeout: 10_000, env: {} },
      (err) => resolve(err ? undefined : found.path),
    );
  });
}
