import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { loopwrightHome } from '../../server/paths';
import { realOrSelf } from './real-path';
import { secretPathsOf } from './secret-paths';

/**
 * The worker's own paths, which code the agent runs must never read or write, and neither may
 * the agent's file tools: LOOPWRIGHT_HOME (keys, the dev server's database, the test-results
 * cache, other runs' worktrees), transcripts and the tool ledger beside them, worktrees, the
 * claim check's payload store, homes,
 * what the worker trusts (allowed signers, grants), a signing key, and every secret file its
 * environment names. Real paths, without duplicates. A path that holds the workspace is not
 * protected from it (an L2 worktree lies in LOOPWRIGHT_HOME): only what lies inside the
 * workspace without holding it, or outside it, is.
 */
export function protectedPaths(env: Record<string, string | undefined>): string[] {
  const transcripts = env.LOOPWRIGHT_TRANSCRIPTS?.trim();
  const paths = [
    loopwrightHome(env),
    transcripts,
    // The tool ledger (the outcome of every finished tool call) lives beside the transcripts.
    transcripts ? path.join(path.dirname(transcripts), 'tool-ledger') : undefined,
    env.LOOPWRIGHT_WORKTREES,
    // The claim check's payloads (crypto/claim-check.ts): every run's specs, model calls and records.
    env.LOOPWRIGHT_PAYLOAD_STORE,
    env.HOME,
    homedir(),
    '/root',
    '/home',
    // What the worker trusts (allowed signers, grants) and a signing key: never visible to agent commands.
    env.LOOPWRIGHT_ALLOWED_SIGNERS,
    env.LOOPWRIGHT_GRANTS,
    env.LOOPWRIGHT_SIGNING_KEY,
    path.join(tmpdir(), 'loopwright'),
    // Whatever else the worker's environment names as a secret file: the key ring
    // (LOOPWRIGHT_KEYS), Temporal's TLS key and certificates, cloud credentials, ...
    ...secretPathsOf(env),
  ].filter((p): p is string => !!p && p.trim() !== '');
  return [...new Set(paths.map(realOrSelf))];
}

/**
 * The worker's own folders among {@link protectedPaths} (LOOPWRIGHT_HOME, transcripts, the tool
 * ledger, worktrees, the payload store, grants): the sandbox masks a path only where it exists, so where one of these
 * lies inside a workspace and does not exist yet, it is made (empty, 0700) before a command runs
 * there. Otherwise the command could make it, and write `<home>/allowed_signers` (which the
 * worker trusts when it exists) or a grant, and the next runs would trust what the agent wrote.
 */
export function protectedFolders(env: Record<string, string | undefined>): string[] {
  const transcripts = env.LOOPWRIGHT_TRANSCRIPTS?.trim();
  const home = loopwrightHome(env);
  return [
    home,
    transcripts,
    transcripts ? path.join(path.dirname(transcripts), 'tool-ledger') : undefined,
    env.LOOPWRIGHT_WORKTREES,
    env.LOOPWRIGHT_PAYLOAD_STORE,
    env.LOOPWRIGHT_GRANTS?.trim() || path.join(home, 'grants'),
  ].filter((p): p is string => !!p && p.trim() !== '');
}

let cached: { key: string; paths: string[] } | undefined;

/** {@link protectedPaths} of this process's environment, computed again only when it changes. */
export function workerProtectedPaths(): string[] {
  const key = JSON.stringify(process.env);
  if (cached?.key !== key) cached = { key, paths: protectedPaths(process.env) };
  return cached.paths;
}
