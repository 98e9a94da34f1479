import { rmSync } from 'fs';
import { whichAll } from './binary-locator';
import { tryPidLock } from './pid-lock';
import { failureReason, runCommand, type CommandResult } from './run-command';

/** What decides whether apt-get may install: the platform and this process's uid. */
export interface AptHost {
  platform: NodeJS.Platform;
  uid: number | undefined;
}

/** What {@link aptInstallOnce} installs, and how it tells that the install worked. */
export interface AptInstallOptions {
  /** The Debian package: `chromium`, `bubblewrap`. */
  pkg: string;
  env: NodeJS.ProcessEnv;
  /** Lock file that lets only one process install at a time; a stale one (dead pid) is taken over. */
  lockFile: string;
  /** Called once, before apt-get runs: the one line saying what is being installed and why. */
  log: (line: string) => void;
  /** Why this install: the start of the log line, e.g. `Chromium not found`. */
  reason: string;
  /** The working binary, or undefined with why each candidate failed pushed onto `tried`. */
  find(tried: string[]): Promise<string | undefined>;
}

const INSTALL_TIMEOUT_MS = 15 * 60_000;
// What apt-get install prints when its package lists lack the package (no `apt-get update` yet,
// as in a fresh Docker image) or are too old to fetch it from.
const STALE_LISTS =
  /Unable to locate package|has no installation candidate|Unable to fetch some archives|Failed to fetch/;

/** The platform and uid of this process. */
export function currentHost(): AptHost {
  return { platform: process.platform, uid: process.getuid?.() };
}

/** Why apt-get cannot install packages for this process (not Linux, not root, no apt-get), or undefined when it can. */
export function whyCannotAptInstall(env: NodeJS.ProcessEnv, host: AptHost = currentHost()): string | undefined {
  if (host.platform !== 'linux') return `only done on Linux, this is ${host.platform}`;
  if (host.uid !== 0) return 'not root, so apt-get cannot install it';
  if (whichAll('apt-get', env.PATH).length === 0) return 'no apt-get on PATH';
  return undefined;
}

/**
 * Installs Debian's `opts.pkg` with apt-get (`apt-get install -y`, preceded by `apt-get update`
 * only when the package lists lack it) while holding `opts.lockFile`, and resolves with what
 * `opts.find` finds afterwards. A process that finds the lock held waits (up to 15 min), then
 * looks again and uses what the holder installed, so concurrent processes install once. The
 * caller checks {@link whyCannotAptInstall} first. Rejects with a one-line `Error` saying which
 * step failed.
 */
export async function aptInstallOnce(opts: AptInstallOptions): Promise<string> {
  const deadline = Date.now() + INSTALL_TIMEOUT_MS;
  for (;;) {
    if (takeLock(opts.lockFile)) {
      try {
        const installed = await opts.find([]);
        if (installed) return installed;
        await aptGetInstall(opts);
        const tried: string[] = [];
        const found = await opts.find(tried);
        if (found) return found;
        throw new Error(`apt-get installed ${opts.pkg} but none works: ${tried.join('; ')}`);
      } finally {
        rmSync(opts.lockFile, { force: true });
      }
    }
    if (Date.now() > deadline)
      throw new Error(`another process held the install lock ${opts.lockFile} for ${INSTALL_TIMEOUT_MS / 60_000} min`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Creates the lock file with this pid; false while a live process (or one starting just now) holds it. */
function takeLock(lockFile: string): boolean {
  return tryPidLock(lockFile, { youngMs: 5000 }).taken;
}

async function aptGetInstall(opts: AptInstallOptions): Promise<void> {
  // The apt-get found on the caller's PATH, by its full path: exactly the one whyCannotAptInstall saw.
  const aptGet = whichAll('apt-get', opts.env.PATH)[0] ?? 'apt-get';
  const env = { ...opts.env, DEBIAN_FRONTEND: 'noninteractive' };
  // DPkg::Lock::Timeout: wait for another apt run's dpkg lock instead of failing at once.
  const install = ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', opts.pkg];
  const run = (args: string[]): Promise<CommandResult> =>
    runCommand(aptGet, args, { env, timeoutMs: INSTALL_TIMEOUT_MS });
  const fail = (args: string[], result: CommandResult) =>
    new Error(`apt-get ${args.join(' ')} ${failureReason(result)}`);
  opts.log(
    `${opts.reason}: installing Debian's ${opts.pkg} package (apt-get install -y ${opts.pkg}, after apt-get update if the package lists lack it)`,
  );

  const first = await run(install);
  if (!first.error && first.code === 0) return;
  if (first.error || !STALE_LISTS.test(`${first.stdout}\n${first.stderr}`)) throw fail(install, first);
  const update = await run(['update']);
  if (update.error || update.code !== 0) throw fail(['update'], update);
  const second = await run(install);
  if (second.error || second.code !== 0) throw fail(install, second);
}
