/**
 * Which of a process's variables hold secrets: all of them, except names on an allow-list of
 * settings that are not (PATH, HOME, LANG, TERM, NODE_*, the non-secret LOOPWRIGHT_* and
 * TEMPORAL_* settings, ...). A name on a prefix of that list that still reads like a secret
 * (NODE_AUTH_TOKEN, LOOPWRIGHT_CODEC_TOKEN, GITHUB_TOKEN) is a secret; a name in
 * LOOPWRIGHT_REDACT always is. Pure: the caller passes the environment.
 */
import { isSecretValue } from './redact-patterns';

/** Names whose values are never secrets. */
const SAFE_NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'USERNAME',
  'SHELL',
  'PWD',
  'OLDPWD',
  'INIT_CWD',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'LANG',
  'LANGUAGE',
  'TERM',
  'COLORTERM',
  'FORCE_COLOR',
  'NO_COLOR',
  'CLICOLOR',
  'LS_COLORS',
  'LSCOLORS',
  'COLUMNS',
  'LINES',
  'CI',
  'HOSTNAME',
  'HOSTTYPE',
  'OSTYPE',
  'MACHTYPE',
  'SHLVL',
  '_',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'LESS',
  'LESSOPEN',
  'LESSCLOSE',
  'MAIL',
  'MANPATH',
  'INFOPATH',
  'DISPLAY',
  'WAYLAND_DISPLAY',
  'DEBUG',
  'JEST_WORKER_ID',
  'VIRTUAL_ENV',
  'GOPATH',
  'GOROOT',
  'JAVA_HOME',
  'CARGO_HOME',
  'RUSTUP_HOME',
  'PYTHONPATH',
  'HISTFILE',
  'HISTSIZE',
  'HISTCONTROL',
  'ZDOTDIR',
  'DEBIAN_FRONTEND',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'TEMPORAL_CLI',
  'TEMPORAL_UI_PORT',
]);
/** Prefixes of names whose values are not secrets unless the name reads like one. */
const SAFE_PREFIX =
  /^(?:LC_|NODE_|npm_|XDG_|LOOPWRIGHT_|GITHUB_|RUNNER_|TERM_|GIT_(?:AUTHOR|COMMITTER)_(?:NAME|EMAIL|DATE)$)/;
/** A name that reads like a secret, whatever its prefix. */
const SECRET_WORD =
  /KEY|TOKEN|SECRET|PASS|PWD|CRED|AUTH|PRIVATE|SIGN|SESSION|COOKIE|DSN|CERT|(?:^|_)PAT(?:_|$)|_URL$|_URI$/i;

/** Whether `name` is on the allow-list of variables whose values are not secrets. */
export function isSafeEnvName(name: string): boolean {
  return SAFE_NAMES.has(name) || (SAFE_PREFIX.test(name) && !SECRET_WORD.test(name));
}

/** The names configured in LOOPWRIGHT_REDACT (comma- or space-separated). */
export function redactNames(env: Record<string, string | undefined>): string[] {
  return (env.LOOPWRIGHT_REDACT ?? '').split(/[\s,]+/).filter(Boolean);
}

/** A value of a variable not named like a secret that is still ordinary: a short word, a number, an address. */
const ORDINARY_VALUE =
  /^(?:[A-Za-z][a-z]{0,11}|[A-Z]{1,12}|\d{1,11}|(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?|localhost(?::\d{1,5})?)$/;

/**
 * The redaction a process applies: the configured names, and the values of its variables
 * (every name but the allow-list's, see {@link isSafeEnvName}; a configured name always), so a
 * key that appears on its own (in a candidate, a tool's output, a report) is still caught.
 * Values shorter than 8 characters and words like `disabled` are ignored (they would erase
 * prose); so are ordinary values (a single word, a number, an address) of variables whose names
 * do not read like secrets. The values never leave the process.
 */
export function redactionFromEnv(
  env: Record<string, string | undefined>,
  names: string[] = [],
): { names: string[]; values: string[] } {
  const configured = new Set([...redactNames(env), ...names].map((n) => n.toLowerCase()));
  const values: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value || !isSecretValue(value)) continue;
    const named = configured.has(name.toLowerCase()) || SECRET_WORD.test(name);
    if (named || (!isSafeEnvName(name) && !ORDINARY_VALUE.test(value))) values.push(value);
  }
  return { names: [...configured], values };
}
