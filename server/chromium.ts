import { spawn } from 'child_process';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { LoopwrightError } from '../common/errors';
import { aptInstallOnce, whyCannotAptInstall } from './apt-install';
import { isExecutableFile, whichAll } from './binary-locator';
import { explicitBinary } from './explicit-binary';
import { failureReason, runCommand } from './run-command';

/** Chromium could not be found, installed or run; the message lists what was tried. */
export class ChromiumError extends LoopwrightError {}

/** Options for {@link findChromium}. */
export interface FindChromiumOptions {
  env?: NodeJS.ProcessEnv;
  /** Install Debian's `chromium` package when none is found and this process may (default true). */
  install?: boolean;
  /** Lock file that lets only one process install at a time (default `<tmpdir>/loopwright-chromium-install.lock`). */
  lockFile?: string;
  log?: (line: string) => void;
}

/** Options for {@link dumpDom}. */
export interface DumpDomOptions {
  /** Virtual time the page gets to run its scripts and fetches before the DOM is taken (default 5 s). */
  virtualTimeMs?: number;
  /** Kill Chromium after this long (default 30 s): a page that never goes idle stalls virtual time. */
  timeoutMs?: number;
}

const DEBIAN_PATH = '/usr/bin/chromium';
const COMMANDS = ['chromium', 'chromium-browser'];
// Headless as root on a machine with a closed network: without the background-networking flags
// Chromium's own connections (updates, sync, QUIC probes) are refused and slow it down.
const HEADLESS_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * A working Chromium: the path in `CHROMIUM`, then `/usr/bin/chromium`, then `chromium` or
 * `chromium-browser` on PATH. When none works and this process is root on Linux with `apt-get`,
 * installs Debian's `chromium` package (`apt-get install -y chromium`, after `apt-get update` when
 * the package lists lack it), holding a lock file so concurrent test workers install once. Throws
 * `ConfigError` when `CHROMIUM` names something unusable and {@link ChromiumError} listing
 * every way tried when nothing works.
 */
export async function findChromium(opts: FindChromiumOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => undefined);
  const explicit = await explicitBinary('CHROMIUM', 'Chromium', env, (path) => checkChromium(path, env));
  if (explicit) return explicit;
  const tried = ['CHROMIUM: not set'];
  const found = await findInstalled(env, tried);
  if (found) return found;

  const cannot = opts.install === false ? 'turned off by the caller' : whyCannotAptInstall(env);
  if (cannot) {
    tried.push(`installing Debian's chromium package: ${cannot}`);
  } else {
    try {
      const lockFile = opts.lockFile ?? join(tmpdir(), 'loopwright-chromium-install.lock');
      return await aptInstallOnce({
        pkg: 'chromium',
        env,
        lockFile,
        log,
        reason: 'Chromium not found',
        find: (t) => findInstalled(env, t),
      });
    } catch (err) {
      tried.push(`installing Debian's chromium package: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new ChromiumError(
    `cannot find or install Chromium. Tried:\n${tried.map((line) => `  - ${line}`).join('\n')}\n` +
      'Install it (Debian: apt-get install chromium) or set CHROMIUM to the path of a Chromium or Chrome binary.',
  );
}

/**
 * Loads `url` in headless Chromium with a fresh profile and resolves with the DOM once the page
 * has had `virtualTimeMs` of virtual time (`--dump-dom`; iframes are not included). Chromium runs
 * in a process group of its own that is killed when it exits, times out or this process exits;
 * the profile folder is removed. Rejects with {@link ChromiumError} when Chromium fails.
 */
export async function dumpDom(chromium: string, url: string, opts: DumpDomOptions = {}): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const profile = mkdtempSync(join(tmpdir(), 'loopwright-chromium-'));
  const args = [
    ...HEADLESS_FLAGS,
    `--user-data-dir=${profile}`,
    `--virtual-time-budget=${opts.virtualTimeMs ?? 5000}`,
    '--dump-dom',
    url,
  ];
  const child = spawn(chromium, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  };
  process.once('exit', killGroup);
  let stdout = '';
  let stderr = '';
  let error: string | undefined;
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-16_384)));
  // Renderer and zygote processes share the group; they must not outlive the browser.
  child.once('exit', killGroup);
  const timer = setTimeout(() => {
    error = `timed out after ${Math.round(timeoutMs / 1000)} s`;
    killGroup();
  }, timeoutMs);
  try {
    const code = await new Promise<number | null>((done) => {
      child.once('error', (err) => {
        error ??= err.message;
        done(null);
      });
      child.once('close', done);
    });
    if (error !== undefined || code !== 0) {
      const lines = stderr.split('\n').filter((line) => line.trim() && !line.includes('dbus'));
      const tail = lines.slice(-5).join('\n');
      throw new ChromiumError(
        `Chromium (${chromium}) could not render ${url}: ${error ?? `exited with code ${String(code)}`}${tail ? `\n${tail}` : ''}`,
      );
    }
    return stdout;
  } finally {
    clearTimeout(timer);
    killGroup();
    process.off('exit', killGroup);
    rmSync(profile, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The first candidate that works; why each one did not goes into `tried`. */
async function findInstalled(env: NodeJS.ProcessEnv, tried: string[]): Promise<string | undefined> {
  const onPath = COMMANDS.flatMap((command) => whichAll(command, env.PATH));
  for (const path of [...new Set([DEBIAN_PATH, ...onPath])]) {
    if (!isExecutableFile(path)) {
      tried.push(`${path}: not installed`);
      continue;
    }
    const reason = await checkChromium(path, env);
    if (reason === undefined) return path;
    tried.push(`${path}: ${reason}`);
  }
  if (onPath.length === 0) tried.push(`PATH: no ${COMMANDS.join(' or ')} on it`);
  return undefined;
}

/** Undefined when `path --version` names Chromium or Chrome, else why not. */
async function checkChromium(path: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const result = await runCommand(path, ['--version'], { env, timeoutMs: 30_000 });
  if (result.error || result.code !== 0) return `\`${path} --version\` ${failureReason(result)}`;
  return /chrom/i.test(result.stdout)
    ? undefined
    : `\`${path} --version\` printed ${JSON.stringify(result.stdout.trim().split('\n')[0])}, not a Chromium version`;
}
