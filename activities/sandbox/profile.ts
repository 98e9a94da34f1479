import { chmodSync, lstatSync, mkdtempSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

let empty: string | undefined;

/** An empty, read-only file of this process's own (in a private folder), to mask files with. */
export function emptyFile(): string {
  if (empty && statSync(empty, { throwIfNoEntry: false })?.size === 0) return empty;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'loopwright-mask-')), 'empty');
  writeFileSync(file, '');
  chmodSync(file, 0o444);
  return (empty = file);
}

/**
 * What one sandboxed command may see. Every path is absolute and real (no symlinks).
 * Nothing is mounted unless it is listed here: the rest of the machine (other runs' workspaces,
 * `LOOPWRIGHT_HOME`, users' homes, `/run`, `/var`, `/sys`) simply does not exist inside.
 */
export interface SandboxLayout {
  /** The one writable folder (for L2, the run's git worktree). */
  workspace: string;
  /** The git directories the workspace uses (its `.git`, a worktree's gitdir and common dir): read-only. */
  gitDirs: string[];
  /** More read-only paths: the worker's Node.js install when it is outside the system folders, operator-given paths. */
  readOnly: string[];
  /**
   * Paths that stay unreadable even when they lie inside something mounted (LOOPWRIGHT_HOME
   * inside the workspace, the worker's home inside a read-only path). A path that holds the
   * workspace is not masked: it is not mounted in the first place, only the workspace is.
   */
  masked: string[];
  /** Host files made readable at a fixed path inside: `[host path, path inside]`. */
  files: Array<[string, string]>;
  /** Host paths the command may read (at the same path inside), e.g. a test reporter the worker wrote. */
  readable?: string[];
  /** Host folders the command may write (at the same path inside), e.g. where a test runner writes its results. */
  writable?: string[];
}

/** The system, read-only. `/opt`, `/srv`, `/var` and the homes are left out on purpose. */
export const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

/** Secrets the system folders hold, masked inside the sandbox (a root worker could read them otherwise). */
export const SYSTEM_SECRETS = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/security/opasswd',
  '/etc/sudoers',
  '/etc/sudoers.d',
  '/etc/ssh',
  '/etc/ssl/private',
  '/etc/pki/tls/private',
  '/etc/letsencrypt',
  '/etc/wireguard',
  '/etc/NetworkManager/system-connections',
  '/etc/kubernetes',
  '/etc/rancher',
  '/etc/docker',
  '/etc/containerd',
  // Loopwright's and Temporal's own (the compose file mounts Temporal's TLS keys at /etc/temporal/tls).
  '/etc/loopwright',
  '/etc/temporal',
  // Credentials that package managers, databases and CI runners keep in /etc.
  '/etc/npmrc',
  '/usr/etc/npmrc',
  '/etc/pip.conf',
  '/etc/environment',
  '/etc/apt/auth.conf',
  '/etc/apt/auth.conf.d',
  '/etc/containers/auth.json',
  '/etc/mysql/debian.cnf',
  '/etc/gitlab-runner',
  '/etc/krb5.keytab',
  '/etc/ipsec.secrets',
  '/etc/ppp/chap-secrets',
  '/etc/ppp/pap-secrets',
  '/etc/netplan',
  '/etc/openvpn',
  '/etc/ceph',
];

/** The namespaces and process rules every sandbox gets. */
export const ISOLATION = [
  '--unshare-user',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-net',
  '--unshare-cgroup-try',
  // The sandbox dies with the worker, cannot reach the worker's terminal, and keeps no capabilities.
  '--die-with-parent',
  '--new-session',
  '--cap-drop',
  'ALL',
  '--hostname',
  'loopwright-sandbox',
];

/** True when `inner` is `outer` or lies under it. */
export function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

type Kind = 'dir' | 'file' | 'symlink' | null;

function kindOf(p: string): Kind {
  try {
    const st = lstatSync(p);
    return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file';
  } catch {
    return null;
  }
}

/**
 * Masks a path: a folder becomes an empty read-only tmpfs, a file an empty read-only file
 * (`empty`, a file of the worker's own, not the host's /dev/null: a /dev/null that something
 * replaced with a regular file would show what others wrote to it).
 */
function mask(p: string, empty: string): string[] {
  const kind = kindOf(p);
  if (kind === 'dir') return ['--tmpfs', p, '--remount-ro', p];
  if (kind === 'file' || kind === 'symlink') return ['--ro-bind', empty, p];
  return [];
}

/**
 * The folders strictly between the workspace `ws` and each path of `masked` that exists inside
 * it (outermost first), leaving out paths inside another masked folder, which hides them anyway.
 */
export function pinnedFolders(ws: string, masked: string[]): string[] {
  const inside = masked.filter((p) => p !== ws && isWithin(ws, p) && kindOf(p) !== null);
  const shown = inside.filter((p) => !inside.some((q) => q !== p && isWithin(q, p) && kindOf(q) === 'dir'));
  const pins = new Set<string>();
  for (const p of shown) for (let a = path.dirname(p); a !== ws && isWithin(ws, a); a = path.dirname(a)) pins.add(a);
  return [...pins].sort((a, b) => a.split(path.sep).length - b.split(path.sep).length || (a < b ? -1 : 1));
}

/**
 * bubblewrap's arguments for `layout`, ending with `--` (the command follows). The order
 * matters: later mounts cover earlier ones, so the system comes first, then its masks, the
 * extra read-only paths, the masks inside them, the workspace (writable), its git directories
 * (read-only again, even inside the workspace) or, where it has none, an empty read-only `.git`,
 * the masks inside the workspace, and the files.
 */
export function bwrapArgs(
  layout: SandboxLayout,
  opts: { disableUserns?: boolean; emptyFile?: string; tmpBytes?: number } = {},
): string[] {
  const empty = opts.emptyFile ?? emptyFile();
  // No nested user namespaces (bubblewrap 0.8+): agent code gets no further kernel surface.
  const args = [...ISOLATION, ...(opts.disableUserns ? ['--disable-userns'] : [])];
  const mounted: string[] = [];
  for (const p of SYSTEM_PATHS) {
    const kind = kindOf(p);
    if (kind === 'symlink') args.push('--symlink', readlinkSync(p), p);
    else if (kind === 'dir') {
      args.push('--ro-bind', p, p);
      mounted.push(p);
    }
  }
  // The private /tmp and /dev/shm are tmpfs, in memory: sized where bubblewrap can (--size), so a
  // command cannot fill the machine's memory through them. The rest of /dev is read-only: its
  // device nodes (null, zero, urandom, ptmx) still work, but no file can be written there.
  const sized = opts.tmpBytes === undefined ? [] : ['--size', String(opts.tmpBytes)];
  args.push('--dev', '/dev', ...sized, '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
  // /proc read-only: a worker running as root is root inside too (the same uid), and the kernel
  // lets that uid write most of /proc/sys without any capability (kernel.core_pattern, a program
  // the host then runs as root); and a command could set its own oom_score_adj back from 1000
  // wherever the worker lacks CAP_SYS_RESOURCE (an unprivileged worker, most containers).
  args.push('--proc', '/proc', '--remount-ro', '/proc', ...sized, '--tmpfs', '/tmp', '--dir', '/tmp/home');
  // A path inside a folder masked already is hidden with it. Masking it again would need a mount
  // point in that empty, read-only folder, which bubblewrap cannot make: every command (and the
  // worker's probe) would fail. A key file and its folder are often both named.
  const maskedDirs: string[] = [];
  const maskOnce = (p: string) => {
    if (maskedDirs.some((d) => isWithin(d, p))) return;
    if (kindOf(p) === 'dir') maskedDirs.push(p);
    args.push(...mask(p, empty));
  };
  for (const p of SYSTEM_SECRETS) maskOnce(p);

  const ws = layout.workspace;
  const outside = (p: string) => !isWithin(p, ws);
  for (const p of layout.readOnly) {
    if (kindOf(p) === null || mounted.some((m) => isWithin(m, p))) continue;
    args.push('--ro-bind', p, p);
    mounted.push(p);
  }
  for (const p of layout.masked) {
    if (outside(p) && mounted.some((m) => isWithin(m, p))) maskOnce(p);
  }

  args.push('--bind', ws, ws);
  // Each folder between the workspace and a path masked inside it is bound onto itself: a mount
  // point cannot be renamed or removed (EBUSY). Otherwise a command could rename a folder above
  // the masked path (`mv vendor v2`, LOOPWRIGHT_HOME being vendor/loopwright/.loopwright) and
  // take it, mask and all, to a path that neither the next sandbox nor the file tools mask:
  // both mask by path.
  for (const p of pinnedFolders(ws, layout.masked)) args.push('--bind', p, p);
  const gitPaths = [...layout.gitDirs, path.join(ws, '.git')].filter(
    (p, i, all) => all.indexOf(p) === i && kindOf(p) !== null,
  );
  for (const p of gitPaths) args.push('--ro-bind', p, p);
  // Where the workspace has no .git, code inside must not make one: the worker's own git (its
  // tools, the diff policy, the judge) and the next sandbox would take a .git folder or file it
  // wrote for the workspace's repository, with that config's core.worktree, commondir, alternates
  // or gitdir pointing anywhere on the machine. An empty read-only folder takes its place (the
  // caller removes the mount point bubblewrap leaves, see sandbox.ts); git passes over it as it
  // passes over any folder that is not a repository, and the file tools refuse to write under .git.
  const dotGit = path.join(ws, '.git');
  if (kindOf(dotGit) === null) args.push('--tmpfs', dotGit, '--remount-ro', dotGit);
  for (const p of layout.masked) {
    if (outside(p) && isWithin(ws, p)) maskOnce(p);
  }
  for (const [host, inside] of layout.files) args.push('--ro-bind', host, inside);
  for (const p of layout.readable ?? []) args.push('--ro-bind', p, p);
  for (const p of layout.writable ?? []) args.push('--bind', p, p);
  // The sandbox's own root (a tmpfs holding the mount points) becomes read-only too.
  args.push('--remount-ro', '/', '--chdir', ws, '--');
  return args;
}
