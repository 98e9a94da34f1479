/**
 * The environment of every process the sandbox runs: built from an allow-list, never inherited
 * from the worker and then filtered. Whatever the worker holds (model keys, cloud credentials,
 * an SSH agent socket, database URLs) is simply not there.
 */

/** Where a sandboxed command's HOME and TMPDIR point (a private tmpfs inside the sandbox). */
export const SANDBOX_TMP = '/tmp';
export const SANDBOX_HOME = '/tmp/home';

/** PATH when the worker has none. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Names a loop may not set: they point at the sandbox's private places. */
export const RESERVED_ENV_NAMES = ['HOME', 'TMPDIR'] as const;

/**
 * The allow-listed environment: `PATH` and `LANG` as the worker has them, `HOME` and `TMPDIR`
 * in the private tmpfs (or the given folders when there is no sandbox), `CI=true`, then what
 * the loop declares (`spec.sandbox.env`, validated when the spec is parsed) and what the
 * caller adds (a check's candidate file, discovery's colour settings).
 */
export function commandEnv(
  worker: Record<string, string | undefined>,
  declared: Record<string, string> = {},
  where: { home: string; tmp: string } = { home: SANDBOX_HOME, tmp: SANDBOX_TMP },
): Record<string, string> {
  const env: Record<string, string> = { PATH: worker.PATH || DEFAULT_PATH };
  if (worker.LANG) env.LANG = worker.LANG;
  env.HOME = where.home;
  env.TMPDIR = where.tmp;
  env.CI = 'true';
  for (const [name, value] of Object.entries(declared)) {
    if (!(RESERVED_ENV_NAMES as readonly string[]).includes(name)) env[name] = value;
  }
  return env;
}
