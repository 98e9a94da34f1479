import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../common/errors';

/**
 * What one sandboxed command may use. A fork bomb, a memory hog or a command that fills `/tmp`
 * must stop at its own limit, not take the worker's machine (and the Temporal server on it) down
 * until the command's timeout.
 *
 * - `pids`: processes and threads at once (the cgroup `pids` controller): past it, fork fails;
 * - `memoryBytes`: memory of every process together, the private `/tmp` included (the cgroup
 *   `memory` controller, no swap): past it, the kernel kills a process of the command;
 * - `tmpBytes`: the size of the private `/tmp` and of `/dev/shm` (bubblewrap's `--size`);
 * - `fileBytes`: the largest file a process may write (`RLIMIT_FSIZE`, which binds root too);
 * - `diskFreeBytes`: what the command must leave free on the disk its workspace lies on
 *   (`LOOPWRIGHT_SANDBOX_DISK_FREE`, default 2 GiB; 0 for no check): the worker watches the
 *   disk while the command runs and stops it when less is free (sandbox.ts), so files in the
 *   workspace, each under `fileBytes`, cannot fill the disk the worker, its database and the
 *   Temporal server write to;
 * - `nice`: the CPU priority the command runs at (`nice`, 0 to 19; default 10), so a command that
 *   keeps every core busy (a test suite, a loop) leaves CPU to the worker and the Temporal server
 *   beside it: their heartbeats and workflow tasks do not wait on it. Inside, a process may lower
 *   its priority further but never raise it back (that needs CAP_SYS_NICE, which no sandbox has).
 *
 * The cgroup limits need a cgroup the worker may create: a worker running as root on cgroup v1,
 * or on cgroup v2 where it can enable `pids` and `memory` for a folder of its own. Where it cannot
 * (an unprivileged container, say), the worker says so at start and the commands run with the
 * other two limits and the out-of-memory preference only.
 */
export interface SandboxLimits {
  pids: number;
  memoryBytes: number;
  tmpBytes: number;
  fileBytes: number;
  diskFreeBytes: number;
  nice: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** One limit: its variable, its default, its least value, and how it reads in a sentence. */
const LIMIT_VARIABLES: ReadonlyArray<{
  key: keyof SandboxLimits;
  env: string;
  default: number;
  min: number;
  max?: number;
  size: boolean;
}> = [
  { key: 'pids', env: 'LOOPWRIGHT_SANDBOX_PIDS', default: 1024, min: 16, size: false },
  { key: 'memoryBytes', env: 'LOOPWRIGHT_SANDBOX_MEMORY', default: 4 * GiB, min: 32 * MiB, size: true },
  { key: 'tmpBytes', env: 'LOOPWRIGHT_SANDBOX_TMP', default: 1 * GiB, min: 1 * MiB, size: true },
  { key: 'fileBytes', env: 'LOOPWRIGHT_SANDBOX_FILE_SIZE', default: 1 * GiB, min: 1 * MiB, size: true },
  { key: 'diskFreeBytes', env: 'LOOPWRIGHT_SANDBOX_DISK_FREE', default: 2 * GiB, min: 0, size: true },
  { key: 'nice', env: 'LOOPWRIGHT_SANDBOX_NICE', default: 10, min: 0, max: 19, size: false },
];

/** The variable that sets each limit, for messages. */
export const LIMIT_ENV: Record<keyof SandboxLimits, string> = Object.fromEntries(
  LIMIT_VARIABLES.map((v) => [v.key, v.env]),
) as Record<keyof SandboxLimits, string>;

const SIZE = /^(\d+)\s*(?:([kmgt])(?:i?b)?|b)?$/i;
const UNIT: Record<string, number> = { k: KiB, m: MiB, g: GiB, t: 1024 * GiB };

/** `512m`, `4g`, `4GiB`, `1048576`: bytes (binary units); undefined when it is not a size. */
export function parseSize(text: string): number | undefined {
  const m = SIZE.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * (m[2] ? (UNIT[m[2].toLowerCase()] ?? 1) : 1);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** `4 GiB`, `512 MiB`, `1536 KiB`: the largest binary unit that divides it. */
export function formatSize(bytes: number): string {
  for (const [unit, n] of [
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ] as const) {
    if (bytes >= n && bytes % n === 0) return `${bytes / n} ${unit}`;
  }
  return `${bytes} B`;
}

/**
 * The limits of this worker's environment (`LOOPWRIGHT_SANDBOX_PIDS`, `_MEMORY`, `_TMP`,
 * `_FILE_SIZE`, `_DISK_FREE`, `_NICE`); a value that is not a whole number (or size) at least the least sensible one is
 * a ConfigError naming the variable.
 */
export function sandboxLimitsFromEnv(env: Record<string, string | undefined>): SandboxLimits {
  const limits = {} as SandboxLimits;
  for (const v of LIMIT_VARIABLES) {
    const raw = env[v.env]?.trim();
    if (!raw) {
      limits[v.key] = v.default;
      continue;
    }
    const n = v.size ? parseSize(raw) : /^\d+$/.test(raw) ? Number(raw) : undefined;
    if (n === undefined || n < v.min || (v.max !== undefined && n > v.max)) {
      const what = v.size
        ? `a size of at least ${formatSize(v.min)} (like 512m or 4g)`
        : v.max !== undefined
          ? `a whole number from ${v.min} to ${v.max}`
          : `a whole number of at least ${v.min}`;
      throw new ConfigError(`${v.env}=${env[v.env]} is not ${what}: set it so, or unset it for ${describe(v)}`);
    }
    limits[v.key] = n;
  }
  return limits;
}

function describe(v: (typeof LIMIT_VARIABLES)[number]): string {
  return `the default, ${v.size ? formatSize(v.default) : v.default}`;
}

/** Where this worker makes a cgroup for each command, or why it cannot. */
export type CgroupHome =
  | {
      kind: 'cgroup';
      version: 'v1' | 'v2';
      /** The folder this worker's commands' cgroups go in, per controller (one folder on v2). */
      parents: { pids: string; memory: string };
    }
  | { kind: 'none'; reason: string };

interface Mount {
  root: string;
  point: string;
  type: string;
  superOptions: string[];
}

function mounts(): Mount[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .flatMap((line) => {
      const [left, right] = line.split(' - ');
      if (!left || !right) return [];
      const fields = left.split(' ');
      const [type = '', , superOptions = ''] = right.split(' ');
      return [
        {
          root: unescapeMount(fields[3] ?? '/'),
          point: unescapeMount(fields[4] ?? ''),
          type,
          superOptions: superOptions.split(','),
        },
      ];
    });
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescapeMount(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** This process's cgroup path per v1 controller, and its v2 path under `''`. */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const c of (m[1] ?? '').split(',')) own.set(c, m[2] ?? '/');
  }
  return own;
}

/** The folder of `cgroupPath` in a hierarchy mounted at `mount` (a container may mount a subtree). */
function folderOf(mount: Mount, cgroupPath: string): string {
  const rel = path.posix.relative(mount.root, cgroupPath);
  return rel.startsWith('..') ? mount.point : path.join(mount.point, rel);
}

const FOLDER = 'loopwright';

/**
 * Finds where this worker may make cgroups with `pids` and `memory` limits: on cgroup v1, a
 * `loopwright` folder under its own cgroup in each controller's hierarchy; on v2, a
 * `loopwright` folder under its own cgroup, or else under the root, with both controllers
 * enabled for it. Each place is tried for real (a folder made, a limit written, removed again).
 */
export function findCgroupHome(): CgroupHome {
  if (process.platform !== 'linux') return { kind: 'none', reason: 'cgroups are Linux only' };
  let all: Mount[];
  let own: Map<string, string>;
  try {
    all = mounts();
    own = ownCgroups();
  } catch (err) {
    return { kind: 'none', reason: `cannot read this process's cgroups: ${(err as Error).message}` };
  }
  const v1 = (controller: string) => all.find((m) => m.type === 'cgroup' && m.superOptions.includes(controller));
  const pids = v1('pids');
  const memory = v1('memory');
  const problems: string[] = [];
  if (pids && memory) {
    try {
      const parents = {
        pids: prepareV1(path.join(folderOf(pids, own.get('pids') ?? '/'), FOLDER), 'pids.max', '64'),
        memory: prepareV1(
          path.join(folderOf(memory, own.get('memory') ?? '/'), FOLDER),
          'memory.limit_in_bytes',
          String(64 * MiB),
        ),
      };
      return { kind: 'cgroup', version: 'v1', parents };
    } catch (err) {
      problems.push(`cgroup v1: ${(err as Error).message}`);
    }
  }
  const unified = all.find((m) => m.type === 'cgroup2');
  if (unified) {
    const controllers = readOr(path.join(unified.point, 'cgroup.controllers'), '').split(/\s+/);
    if (!controllers.includes('pids') || !controllers.includes('memory')) {
      problems.push(`cgroup v2 at ${unified.point} has no pids and memory controllers`);
    } else {
      const ownFolder = folderOf(unified, own.get('') ?? '/');
      for (const base of [ownFolder, unified.point].filter((b, i, a) => a.indexOf(b) === i)) {
        try {
          const parent = prepareV2(base);
          return { kind: 'cgroup', version: 'v2', parents: { pids: parent, memory: parent } };
        } catch (err) {
          problems.push(`cgroup v2 under ${base}: ${(err as Error).message}`);
        }
      }
    }
  }
  if (!pids && !memory && !unified) problems.push('no cgroup file system is mounted');
  return { kind: 'none', reason: problems.join('; ') };
}

function readOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

/** Makes `parent` (v1), clears the cgroups of dead workers from it, and tries one child with `limitFile`. */
function prepareV1(parent: string, limitFile: string, value: string): string {
  mkdirSync(parent, { recursive: true });
  removeStale(parent);
  tryChild(parent, [[limitFile, value]]);
  return parent;
}

/** Makes `<base>/loopwright` with pids and memory enabled for its children (v2), and tries one child. */
function prepareV2(base: string): string {
  const wanted = ['pids', 'memory'];
  const enabled = (dir: string) => readOr(path.join(dir, 'cgroup.subtree_control'), '').split(/\s+/);
  if (!wanted.every((c) => enabled(base).includes(c)))
    writeFileSync(path.join(base, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
  const parent = path.join(base, FOLDER);
  mkdirSync(parent, { recursive: true });
  if (!wanted.every((c) => enabled(parent).includes(c)))
    writeFileSync(path.join(parent, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
  removeStale(parent);
  tryChild(parent, [
    ['pids.max', '64'],
    ['memory.max', String(64 * MiB)],
  ]);
  return parent;
}

function tryChild(parent: string, writes: Array<[string, string]>): void {
  const probe = path.join(parent, `probe-${process.pid}`);
  mkdirSync(probe, { recursive: true });
  try {
    for (const [file, value] of writes) writeFileSync(path.join(probe, file), value);
  } finally {
    rmdirSync(probe);
  }
}

/** Cgroups named after a worker process that no longer runs (`<pid>-<n>`): empty, since their commands died with the sandbox. */
function removeStale(parent: string): void {
  for (const name of readdirSync(parent)) {
    const pid = Number(/^(\d+)-\d+$/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pid === process.pid || existsSync(`/proc/${pid}`)) continue;
    try {
      rmdirSync(path.join(parent, name));
    } catch {
      // still holds a process (not ours to kill) or gone already
    }
  }
}

/** The cgroup (one per controller on v1) one command runs in. */
export interface CommandCgroup {
  /** The `cgroup.procs` files the command's first process writes its pid into before it execs. */
  procs: string[];
  /** What the command ran into, as lines for its output ([] when it stayed within its limits). */
  hits(): string[];
  /** Kills whatever is left in it and removes it. */
  remove(): Promise<void>;
}

let sequence = 0;

/** Makes the cgroup of one command with its limits; throws when the kernel refuses. */
export function createCommandCgroup(
  home: Extract<CgroupHome, { kind: 'cgroup' }>,
  limits: SandboxLimits,
): CommandCgroup {
  const name = `${process.pid}-${++sequence}`;
  const pidsDir = path.join(home.parents.pids, name);
  const memoryDir = path.join(home.parents.memory, name);
  const dirs = [...new Set([pidsDir, memoryDir])];
  const made: string[] = [];
  try {
    for (const d of dirs) {
      mkdirSync(d);
      made.push(d);
    }
    writeFileSync(path.join(pidsDir, 'pids.max'), String(limits.pids));
    if (home.version === 'v1') {
      writeFileSync(path.join(memoryDir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // No swap on top of it, where the kernel accounts swap (memsw must be at least the limit).
      const memsw = path.join(memoryDir, 'memory.memsw.limit_in_bytes');
      if (existsSync(memsw)) writeFileSync(memsw, String(limits.memoryBytes));
    } else {
      writeFileSync(path.join(memoryDir, 'memory.max'), String(limits.memoryBytes));
      const swap = path.join(memoryDir, 'memory.swap.max');
      if (existsSync(swap)) writeFileSync(swap, '0');
    }
  } catch (err) {
    for (const d of made) tryRmdir(d);
    throw new Error(`cannot make the command's cgroup ${pidsDir}: ${(err as Error).message}`);
  }
  const count = (file: string, key: string) =>
    Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(readOr(file, ''))?.[1] ?? 0);
  return {
    procs: dirs.map((d) => path.join(d, 'cgroup.procs')),
    hits() {
      const lines: string[] = [];
      if (count(path.join(pidsDir, 'pids.events'), 'max') > 0)
        lines.push(
          `[sandbox: the command reached its limit of ${limits.pids} processes and threads (${LIMIT_ENV.pids}): a fork failed]`,
        );
      const events = home.version === 'v1' ? 'memory.oom_control' : 'memory.events';
      if (count(path.join(memoryDir, events), 'oom_kill') > 0)
        lines.push(
          `[sandbox: the command went over its memory limit of ${formatSize(limits.memoryBytes)} (${LIMIT_ENV.memoryBytes}): the kernel killed a process of it]`,
        );
      return lines;
    },
    async remove() {
      for (let i = 0; i < 50; i++) {
        const left = dirs.flatMap((d) =>
          readOr(path.join(d, 'cgroup.procs'), '')
            .split('\n')
            .filter((l) => l.trim() !== ''),
        );
        for (const pid of left) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone already
          }
        }
        if (dirs.every(tryRmdir)) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      // Left for removeStale at the next worker start: its processes would not die.
    },
  };
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** How often the free disk is looked at while a command runs. */
const DISK_WATCH_MS = 100;

/**
 * Why the disk `dir` lies on has less than `keep` bytes, or less than 1% of its inodes, free
 * (`the disk holding the workspace has …`), or undefined when it has them (or `dir` is gone).
 */
export function diskShortage(dir: string, keep: number): string | undefined {
  let st;
  try {
    st = statfsSync(dir);
  } catch {
    return undefined; // gone or unreadable: the command fails on its own
  }
  const free = st.bavail * st.bsize;
  const why =
    free < keep
      ? `${Math.floor(free / 2 ** 20)} MiB free, less than the ${formatSize(keep)} commands must leave (LOOPWRIGHT_SANDBOX_DISK_FREE)`
      : st.files > 0 && st.ffree < st.files / 100
        ? `${st.ffree} inodes free, less than 1% of its ${st.files}`
        : undefined;
  return why && `the disk holding the workspace has ${why}`;
}

/**
 * Watches the disk `dir` lies on while a command runs there (or the worker's own git writes what
 * a command left there: snapshot.ts): `signal` fires (the command is then stopped, see
 * spawnCapture's `stop`) once less than `keep` bytes, or less than 1% of its inodes,
 * are free, including before it starts. Files in the workspace are each under the file size limit,
 * but many of them filled the disk the worker, its database and the Temporal server write to.
 * What a command can write between two looks (at most about what its memory limit lets it hold
 * as dirty pages, since `fallocate` is refused: seccomp.ts) is what `keep` must cover. `keep` 0:
 * nothing is watched.
 */
export function watchDisk(dir: string, keep: number): { signal: AbortSignal; end(): void } | undefined {
  if (keep <= 0) return undefined;
  const stop = new AbortController();
  const look = () => {
    const why = diskShortage(dir, keep);
    if (why) {
      stop.abort(why);
      clearInterval(timer);
    }
  };
  const timer = setInterval(look, DISK_WATCH_MS);
  look();
  return { signal: stop.signal, end: () => clearInterval(timer) };
}
