import { spawn } from 'node:child_process';
import path from 'node:path';
import { ConfigError } from '../../common/errors';
import { activityCancellation } from '../activity-context';
import { parseSize } from '../sandbox/limits';
import { workerGitEnv } from './git-env';
import { nestedRefusal, unsafeNestedRepositories } from './nested-repos';
import { borrowedStores, objectScopeAt } from './object-scope';
import { configEnv, driverOverrides, staticConfigArgs } from './overrides';
import { readOnlyStoresArgv } from './read-only-stores';

/**
 * The one way the worker runs git on a workspace or repository. The repository is untrusted
 * (the agent could write its config and hooks), so every command runs
 * - with an environment built from an allow-list (git-env.ts): no secret of the worker's reaches
 *   git or anything git could start, and no config or attribute file outside the repository counts;
 * - with command-line overrides (overrides.ts) that disable hooks, fsmonitor, pagers, editors,
 *   signing, credential helpers, every transport, and every filter, diff, merge or other driver
 *   the repository's effective config defines (listed first with `git config --list -z`);
 * - in its own process group, killed (SIGKILL) on timeout (default 10 minutes: a FIFO named by
 *   the repository's config cannot hold the worker), on abort (default: the cancellation of the
 *   activity it runs in) or on too much output.
 * Diffs must still pass `--no-ext-diff --no-textconv` and diff/status `--ignore-submodules=dirty`
 * (a submodule's own repository has drivers of its own): the callers in activities/ do.
 * Inside `withPrivateObjects` (private-objects.ts) for `cwd`, objects are read and written
 * through that private store (`GIT_OBJECT_DIRECTORY`), unless the caller names a store itself;
 * inside any, the stores the private ones borrow are mounted read-only for the command.
 */

/** Options of {@link workerGit}. */
export interface WorkerGitOptions {
  /** `GIT_INDEX_FILE`: a temporary index instead of the repository's. */
  indexFile?: string;
  /**
   * More variables, only `GIT_AUTHOR_*`/`GIT_COMMITTER_*` (see LOOPWRIGHT_IDENTITY) and
   * `GIT_OBJECT_DIRECTORY`/`GIT_ALTERNATE_OBJECT_DIRECTORIES` (see git/land.ts); anything else throws.
   */
  env?: Record<string, string>;
  /** Written to git's stdin (otherwise stdin is /dev/null). */
  input?: string | Buffer;
  /** Most bytes of stdout kept; more kills git and rejects. Default 64 MiB. */
  maxBuffer?: number;
  /** Kills git when it fires; the promise rejects with the signal's reason. Default: the current activity's cancellation. */
  signal?: AbortSignal;
  /** Kills git after this long and rejects. Default 10 minutes. */
  timeoutMs?: number;
  /**
   * The caller found the unsafe nested repositories itself (nested-repos.ts) and excludes each
   * from the command's pathspec, so the command is not refused for them.
   */
  nestedExcluded?: boolean;
}

/** A git command that failed: `git <args> failed in <cwd>: <reason>`. */
export class GitError extends Error {
  /** The first `fatal:`/`error:` line of stderr (else its first line), or why git was killed. */
  readonly reason: string;
  constructor(
    readonly args: readonly string[],
    readonly cwd: string,
    /** git's exit code; null when it was killed or did not start. */
    readonly exitCode: number | null,
    readonly stderr: string,
    /** What git printed before it failed (some commands, like merge-tree, report there). */
    readonly stdout: string,
    killed?: string,
  ) {
    const reason = killed ?? errorLine(stderr) ?? `exit code ${exitCode}`;
    super(`git ${args.join(' ')} failed in ${cwd}: ${reason}`);
    this.name = new.target.name;
    this.reason = reason;
  }
}

const DEFAULT_MAX_BUFFER = 64 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10 * 60 * 1000;
/** How much of stderr (and of stdout, for a failure) a GitError keeps. */
const KEPT_CHARS = 16 * 1024;

/** Runs `git <args>` in `cwd` hardened as described above; resolves its stdout as UTF-8 text. */
export async function workerGit(cwd: string, args: string[], opts: WorkerGitOptions = {}): Promise<string> {
  return (await workerGitBytes(cwd, args, opts)).toString('utf8');
}

/** {@link workerGit} resolving stdout as bytes (`cat-file --batch` output holds binary blobs). */
export async function workerGitBytes(cwd: string, args: string[], given: WorkerGitOptions = {}): Promise<Buffer> {
  const opts = {
    ...given,
    timeoutMs: given.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    signal: given.signal ?? activityCancellation(),
  };
  const scope = opts.env?.GIT_OBJECT_DIRECTORY === undefined ? objectScopeAt(cwd) : undefined;
  const extra = {
    ...(scope ? { GIT_OBJECT_DIRECTORY: scope.objects } : {}),
    ...opts.env,
    ...(opts.indexFile ? { GIT_INDEX_FILE: opts.indexFile } : {}),
  };
  const env = workerGitEnv(extra);
  // Reading config runs nothing; it names the drivers to neutralize (includes followed).
  const listing = await runGit(
    cwd,
    ['config', '--list', '-z'],
    env,
    { ...opts, input: undefined, maxBuffer: DEFAULT_MAX_BUFFER },
    args,
  );
  const config = configEnv(driverOverrides(listing.toString('utf8')));
  const withConfig = workerGitEnv(extra, config);
  if (comparesWorktree(args) && !opts.nestedExcluded && bareRule(cwd).length > 0)
    await refuseUnsafeNested(cwd, withConfig, opts, args);
  // The stores an object scope in force borrows are read-only to the command (read-only-stores.ts).
  return runGit(cwd, args, withConfig, opts, args, await readOnlyStoresArgv(borrowedStores()));
}

/** The working tree and the git directories of the repository at `cwd`; undefined outside one. */
export async function repositoryDirs(
  cwd: string,
  opts: WorkerGitOptions = {},
): Promise<{ top: string; gitDirs: string[] } | undefined> {
  const out = await workerGit(
    cwd,
    ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-dir', '--git-common-dir'],
    opts,
  ).catch(() => undefined);
  const [top, ...gitDirs] = (out ?? '').split('\n').filter(Boolean);
  return top ? { top, gitDirs } : undefined;
}

/**
 * Commands that look at the working tree (a refresh, a status, a diff against the working tree,
 * a listing of untracked files, a checkout that verifies files are up to date): git looks into
 * the repositories nested there, to resolve a gitlink or to tell an untracked one (nested-repos.ts).
 */
const WORKTREE_COMMANDS = new Set([
  'status',
  'diff-files',
  'add',
  'commit',
  'checkout',
  'switch',
  'restore',
  'reset',
  'stash',
  'merge',
  'rebase',
  'cherry-pick',
  'revert',
  'rm',
  'mv',
  'clean',
  'apply',
  'submodule',
]);

/** Whether `args` (a git command line, without global options) compares the working tree. */
export function comparesWorktree(args: string[]): boolean {
  const [command = '', ...rest] = args;
  const options = rest.slice(0, rest.includes('--') ? rest.indexOf('--') : rest.length);
  const has = (...names: string[]) => options.some((o) => names.includes(o));
  switch (command) {
    case 'diff':
      return !has('--cached', '--staged', '--no-index') && options.filter((o) => !o.startsWith('-')).length < 2;
    case 'diff-index':
      return !has('--cached');
    case 'read-tree':
      return has('-u', '--reset') || options.some((o) => /^-[a-z]*u/.test(o));
    case 'update-index':
      return has('--refresh', '--really-refresh', '--again', '-g');
    case 'ls-files':
      return has('-m', '--modified', '-o', '--others');
    default:
      return WORKTREE_COMMANDS.has(command);
  }
}

/**
 * Throws a GitError, running nothing, when the working tree at `cwd` holds a nested repository
 * git must not look into (nested-repos.ts): the command would read or follow it.
 */
async function refuseUnsafeNested(
  cwd: string,
  env: Record<string, string>,
  opts: WorkerGitOptions & { timeoutMs: number },
  shown: string[],
): Promise<void> {
  const dirs = await runGit(
    cwd,
    ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-dir', '--git-common-dir'],
    env,
    { ...opts, input: undefined, maxBuffer: DEFAULT_MAX_BUFFER },
    shown,
  ).catch(() => undefined);
  const [top, ...gitDirs] = (dirs?.toString('utf8') ?? '').split('\n').filter(Boolean);
  if (!top) return; // not a working tree: the command fails on its own
  const [unsafe] = await unsafeNestedRepositories(top, gitDirs);
  if (unsafe) throw new GitError(shown, cwd, null, '', '', `refused: ${nestedRefusal(unsafe.problem)}`);
}

function runGit(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  opts: WorkerGitOptions & { timeoutMs: number },
  shown: string[],
  /** What runs git (read-only-stores.ts), before the command itself; none by default. */
  wrapper: string[] = [],
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason);
    const maxBuffer = opts.maxBuffer ?? DEFAULT_MAX_BUFFER;
    const gitArgs = ['--no-pager', ...staticConfigArgs(), ...bareRule(cwd), ...args];
    const dataKib = gitMemoryKib(process.env);
    // Through a shell that sets the data limit git then inherits (where a lower hard limit is set
    // already, that one binds).
    const [command, ...argv] = [
      ...wrapper,
      ...(dataKib === undefined
        ? ['git', ...gitArgs]
        : ['/bin/sh', '-c', 'ulimit -d "$1" 2>/dev/null; shift; exec git "$@"', 'sh', String(dataKib), ...gitArgs]),
    ];
    const child = spawn(command!, argv, {
      cwd,
      env,
      detached: true,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: string | undefined;
    let settled = false;
    const kill = (why: string) => {
      failure ??= why;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const onAbort = () => kill('aborted');
    const timer = setTimeout(() => kill(`timed out after ${opts.timeoutMs} ms`), opts.timeoutMs);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      const stdout = Buffer.concat(chunks);
      if (opts.signal?.aborted) reject(opts.signal.reason);
      else if (failure !== undefined || code !== 0)
        reject(
          new GitError(shown, cwd, failure ? null : code, stderr, stdout.toString('utf8', 0, KEPT_CHARS), failure),
        );
      else resolve(stdout);
    };
    child.stdout!.on('data', (d: Buffer) => {
      size += d.length;
      if (size > maxBuffer) kill(`its output passed ${maxBuffer} bytes`);
      else chunks.push(d);
    });
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < KEPT_CHARS) stderr += d.toString('utf8');
    });
    child.on('error', (err) => {
      failure ??= err.message;
      finish(null);
    });
    child.on('close', (code) => finish(code));
    if (opts.input !== undefined) {
      child.stdin!.on('error', () => undefined); // git may exit before it reads everything
      child.stdin!.end(opts.input);
    }
  });
}

/** The default of `LOOPWRIGHT_GIT_MEMORY`. */
const DEFAULT_GIT_MEMORY = 2 * 1024 * 1024 * 1024;

/**
 * The data limit (`RLIMIT_DATA`, in KiB) of every git process of the worker, from
 * `LOOPWRIGHT_GIT_MEMORY` (a size like 2g, the default; `off` for none). The worker's git runs
 * outside the sandbox and its cgroup, on files the agent wrote: `git diff` of a 270 MB text file
 * it made holds 5 GB, and read tools run side by side, so a few git_diff calls in one turn took
 * all of the machine's memory. Read-only mappings (packs, the files hashed) do not count, only
 * what git allocates. A bad value is a ConfigError.
 */
export function gitMemoryKib(env: Record<string, string | undefined>): number | undefined {
  const raw = (env.LOOPWRIGHT_GIT_MEMORY ?? '').trim().toLowerCase();
  if (raw === 'off' || raw === 'none') return undefined;
  const bytes = raw === '' ? DEFAULT_GIT_MEMORY : parseSize(raw);
  if (bytes === undefined || bytes < 64 * 1024 * 1024)
    throw new ConfigError(
      `LOOPWRIGHT_GIT_MEMORY=${env.LOOPWRIGHT_GIT_MEMORY} is not a memory limit for the worker's git: give a size of at least 64m (like 2g, the default), or off`,
    );
  return Math.floor(bytes / 1024);
}

/**
 * `safe.bareRepository=explicit` unless `cwd` lies in a `.git` folder (a repository's own git
 * directory, which the worker names on purpose). A workspace without a `.git` of its own is
 * otherwise taken for a bare repository as soon as code in it writes `HEAD`, `objects/` and
 * `refs/` there, and git would then follow that code's config (core.worktree, includes) and
 * commondir or alternates anywhere on the machine. Git 2.45 and later allow the inside of a
 * `.git` folder themselves; 2.39 refuses it, hence the condition.
 */
function bareRule(cwd: string): string[] {
  return path.resolve(cwd).split(path.sep).includes('.git') ? [] : ['-c', 'safe.bareRepository=explicit'];
}

/** The line of stderr that says what went wrong: the first `fatal:`/`error:` line, else the first line. */
function errorLine(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.find((l) => /^(fatal|error):/.test(l)) ?? lines[0];
}
