import { closeSync, mkdirSync, openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, LoopwrightError } from '../../common/errors';
import type { SandboxName } from '../../common/run-record';
import { isExecutableFile, whichAll } from '../../server/binary-locator';
import { runCommand } from '../../server/run-command';
import { spawnCapture, type Captured } from '../tools/spawn-capture';
import { workerTmpDir } from '../../server/private-folder';
import { dotGitRoot, holdDotGit } from './dot-git-holders';
import { closeInheritedFds } from './inherited-fds';
import { commandEnv } from './env';
import {
  createCommandCgroup,
  findCgroupHome,
  sandboxLimitsFromEnv,
  type CgroupHome,
  type SandboxLimits,
  watchDisk,
} from './limits';
import { sanitizedConfigMounts } from './git-config';
import { workspaceGitDirs } from './git-dirs';
import { bwrapArgs, isWithin } from './profile';
import { realOrSelf } from './real-path';
import { seccompFile } from './seccomp';
import { GO_CACHE_SEED, goCacheSeed, seededArgv } from './go-cache';
import { protectedFolders, protectedPaths } from './protected';

/** How a worker runs agent commands: in bubblewrap (the default), or, opted out, without a sandbox. */
export type SandboxMode = 'bwrap' | 'off';

export type { SandboxName };

/** Whether this worker can sandbox commands. */
export type SandboxStatus =
  | { kind: 'bwrap'; path: string; version: string; limits: LimitsStatus }
  /** `LOOPWRIGHT_SANDBOX=off`: commands run without a sandbox, recorded as `sandbox: none`. */
  | { kind: 'none' }
  /** bubblewrap is missing or does not work here: loops that run commands are refused. */
  | { kind: 'unavailable'; reason: string; fix?: string };

/** Which of the {@link SandboxLimits} bind this worker's commands. */
export interface LimitsStatus {
  limits: SandboxLimits;
  /** Where the process and memory limits live, or why there are none. */
  cgroup: CgroupHome;
  /** Whether this bubblewrap sizes the private `/tmp` and `/dev/shm` (`--size`, found in its `--help`). */
  tmpSize: boolean;
}

/**
 * The sandbox does not work on this worker and nobody opted out: a run of a loop that runs
 * commands is refused with this one line (what failed, how to install it, how to opt out).
 */
export class SandboxUnavailableError extends LoopwrightError {
  constructor(reason: string, fix: string = INSTALL_OR_OPT_OUT) {
    super(`the sandbox for agent commands does not work on this worker (${reason}): ${fix}`);
  }
}

/** What to do when bubblewrap is missing or does not work. */
export const INSTALL_OR_OPT_OUT =
  'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set LOOPWRIGHT_SANDBOX=off on the worker to run commands unsandboxed (recorded as sandbox: none)';

/** What to do when the limits are required and cannot be set. */
const GIVE_CGROUPS =
  'run the worker as root or in a cgroup it may manage, or unset LOOPWRIGHT_SANDBOX_LIMITS to run commands without process and memory limits';

/** The sandbox settings of a worker, from its environment. */
export interface SandboxConfig {
  mode: SandboxMode;
  /** An explicit bubblewrap binary (`LOOPWRIGHT_BWRAP`); else `bwrap` on PATH. */
  bwrap?: string;
  /** The worker's environment: only PATH and LANG are passed on to commands. */
  env: Record<string, string | undefined>;
  /** Paths commands must never read (LOOPWRIGHT_HOME, transcripts, worktrees, homes). */
  masked: string[];
  /** The worker's own folders among them, made where they lie in a workspace and do not exist yet (protected.ts). */
  ownFolders?: string[];
  /** More read-only paths (the Node.js install, `LOOPWRIGHT_SANDBOX_READ`). */
  readOnly: string[];
  /** What each command may use (`LOOPWRIGHT_SANDBOX_PIDS`, `_MEMORY`, `_TMP`, `_FILE_SIZE`). */
  limits: SandboxLimits;
  /** `LOOPWRIGHT_SANDBOX_LIMITS=require`: no command runs where the process and memory limits cannot be set. */
  requireLimits: boolean;
  /** Where commands' cgroups go (default: found for this process, limits.ts); tests give another. */
  cgroups?: () => CgroupHome;
  /** The warm Go build cache (go-cache.ts): where its master lies (tests give a folder), or `false` (LOOPWRIGHT_SANDBOX_GO_CACHE=off). */
  goCache?: { root?: string } | false;
}

/** One command to run in a workspace. */
export interface SandboxRunOptions {
  /** The folder the command runs in and the only one it may write. */
  workspace: string;
  /** What the loop declares (`spec.sandbox.env`) and the caller adds; see {@link commandEnv}. */
  env?: Record<string, string>;
  /** A host file the command may read, and the variable that names it (a check's candidate). */
  file?: { host: string; variable: string };
  /**
   * Host paths (absolute) the command may read, at the same path inside: files the worker
   * wrote for it (a test reporter). Never anything the agent could have written.
   */
  readable?: string[];
  /** Host folders (absolute) the command may write, at the same path inside: where a test runner leaves its results. */
  writable?: string[];
  timeoutMs: number;
  capChars: number;
  signal?: AbortSignal;
  heartbeat?: () => void;
}

/** How a sandboxed command ended, and what ran it. */
export interface SandboxedRun extends Captured {
  sandbox: SandboxName;
  /**
   * What the sandbox cut short, as the lines also appended to `output`: a limit the command
   * reached (a fork refused, a process killed for memory) or a stop for the disk reserve. Its
   * exit code then says less than it seems (a script can exit 0 after a fork failed); absent when
   * it ran within its limits.
   */
  limits?: string[];
}

/** Runs commands the agent wrote or chose. */
export interface Sandbox {
  /** Probes once (a real bubblewrap run, not just the binary) and remembers the answer. */
  status(): Promise<SandboxStatus>;
  /** Runs `argv` in the sandbox; throws {@link SandboxUnavailableError} when there is none and nobody opted out. */
  run(argv: string[], opts: SandboxRunOptions): Promise<SandboxedRun>;
}

/** Where a file given with `file` appears inside the sandbox. */
export const SANDBOX_FILE = '/run/loopwright/input';

/**
 * `LOOPWRIGHT_SANDBOX` (`bwrap`, the default, or `off`), `LOOPWRIGHT_BWRAP` and
 * `LOOPWRIGHT_SANDBOX_READ` (more read-only paths, separated by `:`), plus the paths of this
 * worker that commands must not read. A bad value is a ConfigError.
 */
export function sandboxConfigFromEnv(env: Record<string, string | undefined>): SandboxConfig {
  const raw = (env.LOOPWRIGHT_SANDBOX ?? '').trim().toLowerCase();
  let mode: SandboxMode;
  if (raw === '' || raw === 'bwrap' || raw === 'on') mode = 'bwrap';
  else if (raw === 'off' || raw === 'none') mode = 'off';
  else
    throw new ConfigError(
      `LOOPWRIGHT_SANDBOX=${env.LOOPWRIGHT_SANDBOX} is not a sandbox mode: use bwrap (the default) or off`,
    );
  const node = path.dirname(path.dirname(realOrSelf(process.execPath)));
  const extra = (env.LOOPWRIGHT_SANDBOX_READ ?? '').split(':').filter((p) => p.trim() !== '');
  for (const p of extra)
    if (!path.isAbsolute(p))
      throw new ConfigError(
        `LOOPWRIGHT_SANDBOX_READ holds ${p}, which is not an absolute path: list absolute paths separated by ":"`,
      );
  return {
    mode,
    bwrap: env.LOOPWRIGHT_BWRAP?.trim() || undefined,
    env,
    masked: protectedPaths(env),
    ownFolders: protectedFolders(env).map(realOrSelf),
    readOnly: [node, ...extra].map(realOrSelf),
    limits: sandboxLimitsFromEnv(env),
    requireLimits: requireLimitsFromEnv(env),
    ...(goCacheFromEnv(env) ? {} : { goCache: false as const }),
  };
}

/** `LOOPWRIGHT_SANDBOX_GO_CACHE`: `on` (the default) or `off` (every Go command builds the standard library itself). */
function goCacheFromEnv(env: Record<string, string | undefined>): boolean {
  const raw = (env.LOOPWRIGHT_SANDBOX_GO_CACHE ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'on') return true;
  if (raw === 'off') return false;
  throw new ConfigError(
    `LOOPWRIGHT_SANDBOX_GO_CACHE=${env.LOOPWRIGHT_SANDBOX_GO_CACHE} is not a setting: use on (the default) or off`,
  );
}

function requireLimitsFromEnv(env: Record<string, string | undefined>): boolean {
  const raw = (env.LOOPWRIGHT_SANDBOX_LIMITS ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'best-effort') return false;
  if (raw === 'require') return true;
  throw new ConfigError(
    `LOOPWRIGHT_SANDBOX_LIMITS=${env.LOOPWRIGHT_SANDBOX_LIMITS} is not a limits mode: use best-effort (the default) or require`,
  );
}

/** The bubblewrap binary to use (`LOOPWRIGHT_BWRAP`, else `bwrap` on the absolute entries of PATH), or why there is none. */
export function findBwrap(config: Pick<SandboxConfig, 'bwrap' | 'env'>): { path: string } | { reason: string } {
  if (config.bwrap)
    return isExecutableFile(config.bwrap)
      ? { path: config.bwrap }
      : { reason: `LOOPWRIGHT_BWRAP=${config.bwrap} is not an executable file` };
  // Relative PATH entries depend on the working directory, which may be a workspace the agent writes to.
  const absolute = (config.env.PATH ?? '')
    .split(':')
    .filter((d) => path.isAbsolute(d))
    .join(':');
  const found = whichAll('bwrap', absolute).find(isExecutableFile);
  return found ? { path: found } : { reason: 'bwrap is not on PATH' };
}

/**
 * The worker's sandbox. `status()` probes with a real sandboxed command in a scratch
 * workspace (namespaces, mounts and all), so a kernel or container that forbids user
 * namespaces is found at worker start, not in the middle of a run.
 */
export function createSandbox(config: SandboxConfig): Sandbox {
  let probed: Promise<SandboxStatus> | undefined;
  const status = () => (probed ??= probe(config));
  return {
    status,
    async run(argv, opts) {
      const st = await status();
      if (st.kind === 'unavailable') throw new SandboxUnavailableError(st.reason, st.fix);
      if (st.kind !== 'bwrap') return runUnsandboxed(config, argv, opts);
      // A Go module's command starts from its own copy of the worker's trusted build cache (go-cache.ts).
      const seed = await goCacheSeed(config, realOrSelf(opts.workspace), opts.env, opts);
      return runBwrap(config, st.path, st.version, st.limits, argv, opts, true, seed);
    },
  };
}

async function probe(config: SandboxConfig): Promise<SandboxStatus> {
  if (config.mode === 'off') return { kind: 'none' };
  // Before any command: what this process inherited open would otherwise reach every sandbox.
  closeInheritedFds();
  // The worker's fixed folders under /tmp must be its own before anything is written there.
  try {
    workerTmpDir();
    dotGitRoot();
  } catch (err) {
    if (err instanceof ConfigError) return { kind: 'unavailable', reason: err.message };
    throw err;
  }
  const bin = findBwrap(config);
  if (!('path' in bin)) return { kind: 'unavailable', reason: bin.reason };
  const printed = await runCommand(bin.path, ['--version'], {
    env: { PATH: config.env.PATH ?? '' },
    timeoutMs: 10_000,
  });
  const version = /(\d+\.\d+(?:\.\d+)?)/.exec(printed.stdout)?.[1] ?? '0.0.0';
  const help = await runCommand(bin.path, ['--help'], { env: { PATH: config.env.PATH ?? '' }, timeoutMs: 10_000 });
  const limits: LimitsStatus = {
    limits: config.limits,
    cgroup: (config.cgroups ?? findCgroupHome)(),
    tmpSize: /--size\b/.test(help.stdout + help.stderr),
  };
  if (config.requireLimits && limits.cgroup.kind === 'none')
    return {
      kind: 'unavailable',
      reason: `LOOPWRIGHT_SANDBOX_LIMITS=require, but commands cannot get process and memory limits here: ${limits.cgroup.reason}`,
      fix: GIVE_CGROUPS,
    };
  const dir = await mkdtemp(path.join(tmpdir(), 'loopwright-sandbox-probe-'));
  try {
    const run = await runBwrap(
      config,
      bin.path,
      version,
      limits,
      ['/bin/sh', '-c', 'echo probe > written && cat written'],
      {
        workspace: dir,
        timeoutMs: 15_000,
        capChars: 4000,
      },
    );
    if (run.code !== 0 || !run.output.includes('probe')) {
      const why =
        run.output
          .trim()
          .split('\n')
          .find((l) => l.trim() !== '') ?? `exit ${run.code ?? run.signal}`;
      return { kind: 'unavailable', reason: `the bwrap probe failed: ${why.slice(0, 300)}` };
    }
  } catch (err) {
    return { kind: 'unavailable', reason: `the bwrap probe failed: ${(err as Error).message.split('\n')[0]}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { kind: 'bwrap', path: bin.path, version, limits };
}

/** `--disable-userns` (no nested user namespaces inside the sandbox) came with bubblewrap 0.8.0. */
function supportsDisableUserns(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 0 || minor >= 8;
}

async function runBwrap(
  config: SandboxConfig,
  bwrap: string,
  version: string,
  limits: LimitsStatus,
  argv: string[],
  opts: SandboxRunOptions,
  watch = false,
  goCacheSeed?: string,
): Promise<SandboxedRun> {
  const cgroup = limits.cgroup.kind === 'cgroup' ? createCommandCgroup(limits.cgroup, limits.limits) : undefined;
  const disk = watch ? watchDisk(realOrSelf(opts.workspace), limits.limits.diskFreeBytes) : undefined;
  try {
    const run = await runBwrapIn(
      config,
      bwrap,
      version,
      limits,
      cgroup?.procs ?? [],
      goCacheSeed ? seededArgv(argv) : argv,
      opts,
      disk?.signal,
      goCacheSeed,
    );
    const hits = [
      ...(cgroup?.hits() ?? []),
      ...(run.stopped ? [`[sandbox: stopped: ${run.stopped}; remove what the command wrote there]`] : []),
    ];
    return hits.length > 0 ? { ...run, output: [run.output.trimEnd(), ...hits].join('\n'), limits: hits } : run;
  } finally {
    disk?.end();
    await cgroup?.remove();
  }
}

async function runBwrapIn(
  config: SandboxConfig,
  bwrap: string,
  version: string,
  limits: LimitsStatus,
  cgroupProcs: string[],
  argv: string[],
  opts: SandboxRunOptions,
  stop?: AbortSignal,
  goCacheSeed?: string,
): Promise<SandboxedRun> {
  const workspace = realOrSelf(opts.workspace);
  for (const folder of config.ownFolders ?? [])
    if (isWithin(workspace, folder) && folder !== workspace) mkdirSync(folder, { recursive: true, mode: 0o700 });
  const releaseDotGit = holdDotGit(workspace);
  try {
    const env = commandEnv(config.env, opts.env);
    const gitDirs = workspaceGitDirs(workspace);
    // The repositories' config as git needs it, without remotes, tokens or credentials.
    const files: Array<[string, string]> = sanitizedConfigMounts(
      [...gitDirs, path.join(workspace, '.git')].filter((d, i, all) => all.indexOf(d) === i),
    );
    if (opts.file) {
      files.push([realOrSelf(opts.file.host), SANDBOX_FILE]);
      env[opts.file.variable] = SANDBOX_FILE;
    }
    // The trusted master, read-only: the command's shell copies it into its own GOCACHE first.
    if (goCacheSeed) files.push([goCacheSeed, GO_CACHE_SEED]);
    const args = bwrapArgs(
      {
        workspace,
        gitDirs,
        readOnly: config.readOnly,
        masked: config.masked,
        files,
        readable: opts.readable?.map(realOrSelf),
        writable: opts.writable?.map(realOrSelf),
      },
      {
        disableUserns: supportsDisableUserns(version),
        ...(limits.tmpSize ? { tmpBytes: limits.limits.tmpBytes } : {}),
      },
    );
    // The seccomp filter (no setuid or setgid bit, see seccomp.ts), read by bwrap from fd 3: a
    // descriptor of its own for each command, since bwrap reads it to its end.
    const filter = seccompFile();
    const fd = filter ? openSync(filter, 'r') : undefined;
    if (fd !== undefined) args.splice(args.length - 1, 0, '--seccomp', '3');
    let running: Promise<Captured>;
    try {
      // bwrap itself starts with the allow-listed environment: it is pid 1 inside, and its
      // /proc/1/environ must hold nothing the command may not see. A shell first sets the limits
      // everything in the sandbox inherits (see limitShell), then execs bwrap.
      running = spawnCapture(
        [...limitShell(cgroupProcs, limits.limits.fileBytes, limits.limits.nice), bwrap, ...args, ...argv],
        {
          cwd: workspace,
          env,
          timeoutMs: opts.timeoutMs,
          capChars: opts.capChars,
          signal: opts.signal,
          heartbeat: opts.heartbeat,
          ...(stop ? { stop } : {}),
          ...(fd !== undefined ? { extraFds: [fd] } : {}),
        },
      );
    } finally {
      // The child has its copy once spawn returned (spawnCapture spawns synchronously).
      if (fd !== undefined) closeSync(fd);
    }
    return { ...(await running), sandbox: 'bwrap' };
  } finally {
    releaseDotGit?.();
  }
}

/**
 * `sh -c '…' sh <n> <cgroup.procs…> <blocks> <command…>`: a shell that sets what everything in
 * the sandbox inherits and cannot undo without privileges, then execs the command:
 * - the out-of-memory killer's first choice (`oom_score_adj` 1000), so a command that eats the
 *   machine's memory is killed before the worker or the Temporal server is;
 * - the command's cgroups (processes and memory, limits.ts), joined before anything else starts;
 * - the largest file it may write (`ulimit -f`, in POSIX's 512-byte blocks), which binds root too;
 * - its CPU priority (`nice -n`, limits.ts), which it may lower but not raise.
 * Exit 125 when a limit cannot be set: the command never runs without them.
 */
function limitShell(cgroupProcs: string[], fileBytes: number, nice: number): string[] {
  return [
    '/bin/sh',
    '-c',
    'echo 1000 > /proc/self/oom_score_adj 2>/dev/null; n=$1; shift; ' +
      'while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; ' +
      'ulimit -f "$1" || exit 125; shift; p=$1; shift; ' +
      'if [ "$p" -gt 0 ]; then exec nice -n "$p" "$@"; fi; exec "$@"',
    'sh',
    String(cgroupProcs.length),
    ...cgroupProcs,
    String(Math.max(1, Math.floor(fileBytes / 512))),
    String(nice),
  ];
}

/** LOOPWRIGHT_SANDBOX=off: the same environment allow-list, a private HOME, and nothing else between the command and the worker. */
async function runUnsandboxed(config: SandboxConfig, argv: string[], opts: SandboxRunOptions): Promise<SandboxedRun> {
  const home = await mkdtemp(path.join(tmpdir(), 'loopwright-home-'));
  try {
    const env = commandEnv(config.env, opts.env, { home, tmp: tmpdir() });
    if (opts.file) env[opts.file.variable] = opts.file.host;
    const run = await spawnCapture(argv, {
      cwd: realOrSelf(opts.workspace),
      env,
      timeoutMs: opts.timeoutMs,
      capChars: opts.capChars,
      signal: opts.signal,
      heartbeat: opts.heartbeat,
    });
    return { ...run, sandbox: 'none' };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

let shared: Sandbox | undefined;

/** The sandbox of this process's environment, for callers that were given none (one per process). */
export function defaultSandbox(): Sandbox {
  return (shared ??= createSandbox(sandboxConfigFromEnv(process.env)));
}
