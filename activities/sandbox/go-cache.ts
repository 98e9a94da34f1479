import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rename, rm, writeFile, mkdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isExecutableFile } from '../../server/binary-locator';
import { privateFolder, workerTmpDir } from '../../server/private-folder';
import { failureReason, runCommand } from '../../server/run-command';
import { commandEnv, SANDBOX_HOME } from './env';
import { isWithin, SYSTEM_PATHS } from './profile';

/**
 * A warm Go build cache for sandboxed commands, without a cache that one command writes and
 * another reads.
 *
 * Every sandboxed command has a private HOME, so `go test` would compile `testing` and the
 * standard library it needs from scratch each time (about 15 s of CPU). Go trusts its cache by
 * key (the action id): an entry with the right key and the wrong content is linked as it is. So a
 * cache that any sandboxed command could write and a later one reads would let the agent plant a
 * compiled `strconv` or `testing` of its own making under the real key, and the gate would link
 * it. And a cache only the gate gets would tell the gate's runs from the agent's.
 *
 * Instead the worker builds one **master** cache itself, outside any sandbox: its own `go`, in
 * the environment commands get (commandEnv) with an empty HOME, compiling and vetting a small
 * module of its own that imports `testing` and common packages of the standard library. Nothing
 * the agent wrote takes part. It lies in the worker's private temporary folder
 * (`<tmp>/loopwright/go-build/<key>`, never mounted in a sandbox), built once per Go installation
 * (the key), lazily on the first command in a Go module, under a lock, in a temporary folder
 * renamed into place when complete.
 *
 * Each command whose workspace is a Go module then gets the master read-only at
 * {@link GO_CACHE_SEED} and, before its own command starts, a copy of it of its own at Go's
 * default GOCACHE (`$HOME/.cache/go-build`, in its private `/tmp`): the same path and the same
 * environment as before, for the agent's commands and the gate's runs alike. What a command
 * writes into its copy dies with its `/tmp`; the master is a read-only mount.
 */

/** Where the master appears, read-only, inside a sandbox whose command gets a copy. */
export const GO_CACHE_SEED = '/run/loopwright/go-build';

/** Go's default GOCACHE inside the sandbox (`os.UserCacheDir()/go-build` with HOME = SANDBOX_HOME). */
export const SANDBOX_GOCACHE = path.posix.join(SANDBOX_HOME, '.cache', 'go-build');

/**
 * The shell that copies the master into the command's own GOCACHE and then becomes the command.
 * A copy that fails (its `/tmp` is full) is removed, not left half there: Go then starts with an
 * empty cache, as it did before. A command that is not there fails as bubblewrap's own execvp
 * fails (exit 1, the same line), which run_command turns into a tool error.
 */
const SEED_SHELL =
  `command -v -- "$1" >/dev/null 2>&1 || { printf 'bwrap: execvp %s: No such file or directory\\n' "$1" >&2; exit 1; }; ` +
  `mkdir -p ${path.posix.dirname(SANDBOX_GOCACHE)} 2>/dev/null && ` +
  `{ cp -R ${GO_CACHE_SEED} ${SANDBOX_GOCACHE} 2>/dev/null || rm -rf ${SANDBOX_GOCACHE}; }; exec "$@"`;

/** `argv` run after the copy: `/bin/sh -c <copy; exec "$@"> sh argv...`. */
export function seededArgv(argv: string[]): string[] {
  return ['/bin/sh', '-c', SEED_SHELL, 'sh', ...argv];
}

/** What the master cache needs from the sandbox's settings. */
export interface GoCacheConfig {
  /** The worker's environment (its PATH and LANG reach commands, see commandEnv). */
  env: Record<string, string | undefined>;
  /** The extra read-only paths commands see (besides the system's). */
  readOnly: string[];
  /** The paths commands never see. */
  masked: string[];
  /** Where masters are kept (default `<tmp>/loopwright/go-build`); `false`: no warm cache (LOOPWRIGHT_SANDBOX_GO_CACHE=off). */
  goCache?: { root?: string } | false;
}

/** Names whose declared value moves GOCACHE away from its default: then the loop chose its own, and it gets no copy. */
const MOVES_GOCACHE = ['GOCACHE', 'XDG_CACHE_HOME'];

/** How long building a master may take before the worker gives up on it (and on warm caches until it restarts). */
const BUILD_TIMEOUT_MS = 10 * 60_000;

/** A lock older than this is taken to be a crashed builder's. */
const STALE_LOCK_MS = BUILD_TIMEOUT_MS + 60_000;

/** The standard library packages the master holds, besides `testing` and what `go test` needs. */
const SEED_IMPORTS = [
  'bufio',
  'bytes',
  'context',
  'encoding/json',
  'errors',
  'flag',
  'fmt',
  'io',
  'io/fs',
  'log',
  'maps',
  'math',
  'math/rand',
  'os',
  'os/exec',
  'path/filepath',
  'reflect',
  'regexp',
  'slices',
  'sort',
  'strconv',
  'strings',
  'sync',
  'sync/atomic',
  'time',
  'unicode',
  'unicode/utf8',
];

/** Whether `workspace` is a Go module: a go.mod or go.work at its root or one folder down. */
export function isGoWorkspace(workspace: string): boolean {
  const here = (dir: string) => existsSync(path.join(dir, 'go.mod')) || existsSync(path.join(dir, 'go.work'));
  if (here(workspace)) return true;
  let entries;
  try {
    entries = readdirSync(workspace, { withFileTypes: true });
  } catch {
    return false;
  }
  return entries.some(
    (e) =>
      e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules' && here(path.join(workspace, e.name)),
  );
}

/**
 * The `go` a sandboxed command runs by name: the first `go` on PATH that the sandbox shows (under
 * the system folders or the extra read-only paths, and not masked), or undefined. Relative PATH
 * entries would resolve inside the workspace: they are passed over.
 */
export function sandboxGo(config: GoCacheConfig): string | undefined {
  const visible = (p: string) =>
    [...SYSTEM_PATHS, ...config.readOnly].some((r) => isWithin(r, p)) && !config.masked.some((m) => isWithin(m, p));
  for (const dir of (config.env.PATH ?? '').split(':')) {
    if (!path.isAbsolute(dir)) continue;
    const file = path.join(dir, 'go');
    if (!isExecutableFile(file)) continue;
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      continue;
    }
    if (visible(dir) && visible(real)) return file;
  }
  return undefined;
}

/** Masters being found or built in this process, by folder. */
const masters = new Map<string, Promise<string | undefined>>();

/**
 * The master cache's folder for a command in `workspace` with the loop's declared `env`, built
 * first if need be, or undefined when the command gets none: not a Go module, GOCACHE moved by
 * the loop, no `go` in the sandbox, warm caches off, or the master could not be built (said once
 * on stderr; the worker then gives every command a cold cache, as before, until it restarts).
 */
export async function goCacheMaster(
  config: GoCacheConfig,
  workspace: string,
  declared: Record<string, string> = {},
): Promise<string | undefined> {
  if (config.goCache === false) return undefined;
  if (MOVES_GOCACHE.some((name) => declared[name] !== undefined)) return undefined;
  if (!isGoWorkspace(workspace)) return undefined;
  const go = sandboxGo(config);
  if (!go) return undefined;
  const root = config.goCache?.root ?? workerTmpDir('go-build');
  const memo = `${root}\0${go}\0${config.env.PATH ?? ''}\0${config.env.LANG ?? ''}`;
  let found = masters.get(memo);
  if (found) {
    const dir = await found;
    // Removed from under the worker (a /tmp cleaner): built again.
    if (dir === undefined || existsSync(dir)) return dir;
  }
  found = findOrBuild(config, go, root).catch((err: unknown) => {
    process.stderr.write(
      `loopwright: no warm Go build cache for sandboxed commands (each builds the standard library itself): ${(err as Error).message}\n`,
    );
    return undefined;
  });
  masters.set(memo, found);
  return found;
}

/** The environment the master is built in: the commands' own, with an empty HOME, no network, this go only. */
function buildEnv(config: GoCacheConfig, scratch: string, cache?: string): Record<string, string> {
  return {
    ...commandEnv(config.env, {}, { home: path.join(scratch, 'home'), tmp: path.join(scratch, 'tmp') }),
    // No go.env of a user's, no go.work of a folder above the scratch folder, no other toolchain, no network.
    GOENV: 'off',
    GOWORK: 'off',
    GOTOOLCHAIN: 'local',
    GOPROXY: 'off',
    GOFLAGS: '',
    ...(cache ? { GOCACHE: cache } : {}),
  };
}

async function findOrBuild(config: GoCacheConfig, go: string, root: string): Promise<string> {
  privateFolder(root);
  const scratch = await mkdtemp(path.join(root, '.build-'));
  try {
    await mkdir(path.join(scratch, 'home'));
    await mkdir(path.join(scratch, 'tmp'));
    // The key: this go, where it lives, and what its builds depend on besides flags.
    const described = await runCommand(go, ['env', 'GOVERSION', 'GOROOT', 'GOOS', 'GOARCH', 'CGO_ENABLED', 'CC'], {
      env: buildEnv(config, scratch),
      cwd: scratch,
      timeoutMs: 60_000,
    });
    if (described.code !== 0 || described.error) throw new Error(`go env ${failureReason(described)}`);
    const st = statSync(realpathSync(go));
    const key = createHash('sha256')
      .update(JSON.stringify({ v: 1, go: realpathSync(go), size: st.size, mtime: st.mtimeMs, env: described.stdout }))
      .digest('hex')
      .slice(0, 24);
    const master = path.join(root, key);
    if (existsSync(master)) return master;
    return await underLock(`${master}.lock`, master, () => {
      pruneScratch(root, scratch);
      return build(config, go, scratch, master);
    });
  } finally {
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Removes what builders that died left in `root` (`.build-*` folders older than any build may take), but `keep`. */
export function pruneScratch(root: string, keep: string): void {
  for (const name of readdirSync(root)) {
    const p = path.join(root, name);
    if (!name.startsWith('.build-') || p === keep) continue;
    try {
      if (Date.now() - statSync(p).mtimeMs > STALE_LOCK_MS) rmSync(p, { recursive: true, force: true });
    } catch {
      // Gone already.
    }
  }
}

/** Builds the master in `scratch` and renames it to `master`. */
async function build(config: GoCacheConfig, go: string, scratch: string, master: string): Promise<void> {
  const mod = path.join(scratch, 'seed');
  const cache = path.join(scratch, 'cache');
  await mkdir(mod);
  await writeFile(path.join(mod, 'go.mod'), 'module loopwright.invalid/seed\n\ngo 1.18\n');
  await writeFile(
    path.join(mod, 'seed.go'),
    `package seed\n\nimport (\n${SEED_IMPORTS.map((p) => `\t_ ${JSON.stringify(p)}\n`).join('')})\n`,
  );
  await writeFile(
    path.join(mod, 'seed_test.go'),
    'package seed\n\nimport "testing"\n\nfunc TestSeed(t *testing.T) { t.Log("seed") }\n',
  );
  // Compiles and vets the module and the standard library it needs, links a test binary, runs no test.
  const run = await runCommand(go, ['test', '-count=1', '-run', '^$', './...'], {
    env: buildEnv(config, scratch, cache),
    cwd: mod,
    timeoutMs: BUILD_TIMEOUT_MS,
  });
  if (run.code !== 0 || run.error) throw new Error(`go test of the seed module ${failureReason(run)}`);
  try {
    await rename(cache, master);
  } catch (err) {
    // Another builder (one that took a lock it found stale) finished first: its master serves.
    if (!existsSync(master)) throw err;
  }
}

/**
 * Runs `work` holding the lock folder `lock` (made with mkdir, which only one process wins), unless
 * `done` exists by then; another process's lock is waited for until it is gone or stale (its
 * process is dead, or it is older than STALE_LOCK_MS).
 */
export async function underLock(lock: string, done: string, work: () => Promise<void>): Promise<string> {
  for (;;) {
    if (existsSync(done)) return done;
    try {
      mkdirSync(lock, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockIsStale(lock)) rmSync(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    try {
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      if (!existsSync(done)) await work();
      return done;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

function lockIsStale(lock: string): boolean {
  let age: number;
  try {
    age = Date.now() - statSync(lock).mtimeMs;
  } catch {
    // Gone: the holder finished; look again.
    return false;
  }
  if (age > STALE_LOCK_MS) return true;
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
  } catch {
    // Made, and its pid not written yet (or never: the holder died in between).
    return age > 5_000;
  }
  if (!Number.isInteger(pid) || pid <= 0) return age > 5_000;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * {@link goCacheMaster} for one command: heartbeats while a master is being built (the first Go
 * command of a worker waits for it), and gives up waiting (not building) when `signal` aborts.
 */
export async function goCacheSeed(
  config: GoCacheConfig,
  workspace: string,
  declared: Record<string, string> | undefined,
  opts: { signal?: AbortSignal; heartbeat?: () => void },
): Promise<string | undefined> {
  const master = goCacheMaster(config, workspace, declared);
  const beat = opts.heartbeat ? setInterval(opts.heartbeat, 5_000) : undefined;
  let onAbort: (() => void) | undefined;
  try {
    const aborted = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      if (opts.signal?.aborted) resolve(undefined);
      else opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
    return await Promise.race([master, aborted]);
  } finally {
    if (beat) clearInterval(beat);
    if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
  }
}
