/**
 * The environment of the worker's git commands, built from an allow-list and never inherited:
 * the worker's process.env holds API keys and other secrets, and git passes its environment to
 * every program it starts (a hook, a filter, a helper, if one ever ran).
 */

/** The author and committer of every commit the worker makes. */
export const LOOPWRIGHT_IDENTITY: Readonly<Record<string, string>> = {
  GIT_AUTHOR_NAME: 'Loopwright',
  GIT_AUTHOR_EMAIL: 'loopwright@localhost',
  GIT_COMMITTER_NAME: 'Loopwright',
  GIT_COMMITTER_EMAIL: 'loopwright@localhost',
};

/**
 * The variables a caller may add (the index to use, who commits, where objects are read and
 * written: a landing's scratch store, see land.ts): nothing else gets in.
 */
const CALLER_VARIABLES =
  /^GIT_(INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE))$/;

/** Used when the worker has no PATH at all. */
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * The absolute entries of a PATH. git is looked up with the workspace as the working directory,
 * where a relative entry (`node_modules/.bin`, `.`, or an empty one, which means `.`) would find
 * a `git` that code in the workspace wrote, and the worker would run it outside the sandbox.
 */
export function absoluteEntries(pathList: string): string {
  return pathList
    .split(':')
    .filter((dir) => dir.startsWith('/'))
    .join(':');
}

/**
 * The environment for one git command: the worker's PATH (its absolute entries, to find git), and settings that keep
 * every configuration and attribute file outside the repository out (`GIT_CONFIG_NOSYSTEM`,
 * `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_ATTR_NOSYSTEM`, a HOME and XDG_CONFIG_HOME that hold no
 * files), no prompt, pager, editor, askpass or proxy program, no transport, no lazy fetch, no
 * replace objects or grafts and no optional index writes; then `extra` (caller variables, which must be
 * `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES` or `GIT_AUTHOR_*`/`GIT_COMMITTER_*`) and `config` (the `GIT_CONFIG_*`
 * overrides, see overrides.ts). Throws on any other caller variable: a bug, not a user error.
 */
export function workerGitEnv(
  extra: Record<string, string> = {},
  config: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: absoluteEntries(process.env.PATH ?? '') || DEFAULT_PATH,
    LC_ALL: 'C',
    // Not a folder: ~/.gitconfig, ~/.config/git/{config,attributes,ignore} cannot exist.
    HOME: '/dev/null',
    XDG_CONFIG_HOME: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    // Set but empty: git takes it over core.askPass and SSH_ASKPASS, and runs nothing.
    GIT_ASKPASS: '',
    // Set but empty: git takes it over every core.gitProxy (first match wins there) and uses none.
    GIT_PROXY_COMMAND: '',
    // Set: only the protocols listed may be used, and none is.
    GIT_ALLOW_PROTOCOL: '',
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_NO_LAZY_FETCH: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    // No info/grafts: history (the effect ledger) is what the commits say.
    GIT_GRAFT_FILE: '/dev/null',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_PAGER: 'cat',
    GIT_EDITOR: ':',
  };
  for (const [name, value] of Object.entries(extra)) {
    if (!CALLER_VARIABLES.test(name))
      throw new Error(
        `workerGit: ${name} may not be passed to git (only GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_AUTHOR_* and GIT_COMMITTER_*)`,
      );
    env[name] = value;
  }
  return { ...env, ...config };
}
