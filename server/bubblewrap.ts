import { tmpdir } from 'os';
import { delimiter, isAbsolute, join } from 'path';
import { LoopwrightError } from '../common/errors';
import { aptInstallOnce, currentHost, whyCannotAptInstall, type AptHost } from './apt-install';
import { whichAll } from './binary-locator';
import { explicitBinary } from './explicit-binary';
import { failureReason, runCommand } from './run-command';

/**
 * No working bubblewrap could be found or installed. The message is one line saying how to
 * install it and how to opt out; `tried` holds why each way failed.
 */
export class BubblewrapError extends LoopwrightError {
  constructor(
    message: string,
    readonly tried: readonly string[],
  ) {
    super(message);
  }
}

/** Options for {@link findBubblewrap}. */
export interface FindBubblewrapOptions {
  env?: NodeJS.ProcessEnv;
  /** Install Debian's `bubblewrap` package when none is found and this process may (default true). */
  install?: boolean;
  /** Lock file that lets only one process install at a time (default `<tmpdir>/loopwright-bubblewrap-install.lock`). */
  lockFile?: string;
  log?: (line: string) => void;
  /** The platform and uid that decide whether apt-get may install (default: this process's). */
  host?: AptHost;
}

const OPT_OUT = 'LOOPWRIGHT_SANDBOX=off';

/**
 * The path of a working `bwrap` (one whose `bwrap --version` prints `bubblewrap <version>`):
 * the path in `LOOPWRIGHT_BWRAP`, else the first working `bwrap` in an absolute PATH entry
 * (relative entries depend on the working directory, which may be an agent's workspace, so they
 * are skipped). When none works and this process is root on Linux with `apt-get`, installs
 * Debian's `bubblewrap` package (`apt-get install -y bubblewrap`, after `apt-get update` when the
 * package lists lack it) under a lock file, so concurrent processes install once, and logs one
 * line first. It does not probe namespaces: whether bubblewrap can sandbox here is the sandbox's
 * own probe. Callers skip it when `LOOPWRIGHT_SANDBOX=off`.
 *
 * Throws `ConfigError` when `LOOPWRIGHT_BWRAP` names something unusable (see {@link explicitBinary}),
 * and {@link BubblewrapError} (one line: how to install it, how to opt out) when nothing works.
 */
export async function findBubblewrap(opts: FindBubblewrapOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const host = opts.host ?? currentHost();
  const explicit = await explicitBinary('LOOPWRIGHT_BWRAP', 'bubblewrap', env, (path) => checkBwrap(path, env));
  if (explicit) return explicit;
  if (host.platform !== 'linux') {
    throw new BubblewrapError(
      `the sandbox for agent commands needs bubblewrap, which runs only on Linux (this is ${host.platform}): run the worker on Linux, or set ${OPT_OUT} to run agent commands unsandboxed`,
      [`platform: ${host.platform}`],
    );
  }
  const tried: string[] = [];
  const found = await findOnPath(env, tried);
  if (found) return found;

  const cannot = opts.install === false ? 'turned off by the caller' : whyCannotAptInstall(env, host);
  if (cannot) {
    tried.push(`not installing it: ${cannot}`);
  } else {
    try {
      const lockFile = opts.lockFile ?? join(tmpdir(), 'loopwright-bubblewrap-install.lock');
      const log = opts.log ?? (() => undefined);
      return await aptInstallOnce({
        pkg: 'bubblewrap',
        env,
        lockFile,
        log,
        reason: 'bwrap not found (the sandbox for agent commands needs it)',
        find: (t) => findOnPath(env, t),
      });
    } catch (err) {
      tried.push(`installing it failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  throw new BubblewrapError(
    `cannot find bubblewrap for the sandbox of agent commands (${oneLine(tried.join('; '))}): install it (apt-get install bubblewrap, or your distribution's bubblewrap package) ` +
      `or point LOOPWRIGHT_BWRAP at a bwrap binary, or set ${OPT_OUT} to run agent commands unsandboxed`,
    tried,
  );
}

/** The first working `bwrap` in an absolute PATH entry; why each candidate failed goes into `tried`. */
async function findOnPath(env: NodeJS.ProcessEnv, tried: string[]): Promise<string | undefined> {
  const dirs = (env.PATH ?? '').split(delimiter).filter((dir) => isAbsolute(dir));
  const candidates = whichAll('bwrap', dirs.join(delimiter));
  for (const path of candidates) {
    const reason = await checkBwrap(path, env);
    if (reason === undefined) return path;
    tried.push(`${path}: ${reason}`);
  }
  if (candidates.length === 0) tried.push('no bwrap on PATH');
  return undefined;
}

/** Undefined when `path --version` prints a bubblewrap version, else why not. */
async function checkBwrap(path: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const result = await runCommand(path, ['--version'], { env, timeoutMs: 30_000 });
  if (result.error || result.code !== 0) return `\`${path} --version\` ${failureReason(result)}`;
  const first = result.stdout.trim().split('\n')[0] ?? '';
  return /^bubblewrap \d/.test(first)
    ? undefined
    : `\`${path} --version\` printed ${JSON.stringify(first.slice(0, 80))}, not a bubblewrap version`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}
