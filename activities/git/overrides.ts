/**
 * The configuration every git command of the worker runs with, at command-line scope (which beats
 * every configuration file, the repository's and the files it includes): nothing that the
 * repository's config names as a program runs, and nothing reaches the network.
 *
 * Two parts. {@link STATIC_OVERRIDES} are fixed keys, given as `-c key=value`. Driver-like keys
 * (`filter.<driver>.*`, `diff.<driver>.*`, `merge.<driver>.*`, ...) can only be neutralized by
 * name, so {@link driverOverrides} reads the names from the repository's effective config (`git
 * config --list -z`, includes and config.worktree followed; reading config executes nothing) and
 * returns overrides for each, which the caller passes in `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/
 * `GIT_CONFIG_VALUE_<n>` (command-line scope too, and safe for any subsection name, `=` included).
 * Both reach git's own child processes (git passes them on in its environment).
 *
 * An empty program value never runs anything: git tries to run "" and fails (checked with git
 * 2.39: an empty `diff.external`, `diff.<d>.command` or `diff.<d>.textconv` makes a diff that
 * would use it fail with "cannot run"; `--no-ext-diff --no-textconv` keeps diffs working).
 */
import { must } from '../../common/must';

/** `[key, value, why]`: the fixed command-line overrides. */
export const STATIC_OVERRIDES: ReadonlyArray<readonly [string, string, string]> = [
  [
    'core.hooksPath',
    '/dev/null',
    'no hook runs: git looks for /dev/null/<hook>, which cannot exist (.git/hooks and a repository-set hooksPath alike)',
  ],
  [
    'core.fsmonitor',
    'false',
    'no fsmonitor hook program and no fsmonitor daemon (status, add, diff, read-tree would start it)',
  ],
  ['core.sshCommand', '', 'no ssh program (transports are refused anyway, see protocol.allow)'],
  ['core.askPass', '', 'no askpass program (GIT_ASKPASS is empty too, and GIT_TERMINAL_PROMPT=0)'],
  ['core.editor', ':', 'git treats ":" as "no editor": nothing is launched to edit a message'],
  ['sequence.editor', ':', 'the same for rebase todo lists'],
  [
    'core.pager',
    'cat',
    'no pager (git treats "cat" as none; GIT_PAGER=cat and --no-pager as well, and pager.<cmd> is overridden by name)',
  ],
  ['core.alternateRefsCommand', '', "no program listing an alternate's refs"],
  ['core.useReplaceRefs', 'false', 'refs/replace cannot swap the objects the worker reads, verifies and commits'],
  [
    'core.checkStat',
    'default',
    'a snapshot notices every change: repository config cannot make git trust stale stat data',
  ],
  ['core.trustctime', 'true', 'the same'],
  ['credential.helper', '', 'an empty value clears the helper list: no credential helper program'],
  ['diff.external', '', 'no external diff program (diffs also pass --no-ext-diff)'],
  [
    'diff.ignoreSubmodules',
    'dirty',
    "porcelain diff/status do not start git inside a submodule's own repository, whose drivers are not overridden",
  ],
  ['status.submoduleSummary', 'false', 'status does not run `git submodule summary`'],
  ['submodule.recurse', 'false', 'checkout, read-tree and diff do not recurse into submodule repositories'],
  ['gpg.program', '', 'no signing or verifying program'],
  ['gpg.openpgp.program', '', 'the same'],
  ['gpg.x509.program', '', 'the same'],
  ['gpg.ssh.program', '', 'the same'],
  ['gpg.ssh.defaultKeyCommand', '', 'no program picks an ssh signing key'],
  ['commit.gpgSign', 'false', 'commits are not signed (commit-tree also gets --no-gpg-sign)'],
  ['tag.gpgSign', 'false', 'tags are not signed'],
  ['tag.forceSignAnnotated', 'false', 'the same'],
  ['push.gpgSign', 'false', 'pushes are not signed'],
  ['log.showSignature', 'false', 'log does not run gpg to verify signatures'],
  ['merge.verifySignatures', 'false', 'merges do not run gpg to verify signatures'],
  ['interactive.diffFilter', '', 'no filter program for interactive hunks'],
  [
    'protocol.allow',
    'never',
    'no transport at all: a lazy fetch (partial clone), a submodule or a remote cannot run upload-pack, ssh, a proxy or a remote helper',
  ],
  ['protocol.file.allow', 'never', 'the same, for protocols the repository allows by name'],
  [
    'protocol.git.allow',
    'never',
    'the same (this also keeps core.gitProxy from running; GIT_PROXY_COMMAND is empty too)',
  ],
  ['protocol.ssh.allow', 'never', 'the same'],
  ['protocol.http.allow', 'never', 'the same'],
  ['protocol.https.allow', 'never', 'the same'],
  ['protocol.ext.allow', 'never', 'the same (ext:: runs any command)'],
  ['gc.auto', '0', 'no automatic gc/maintenance process in the background'],
  ['maintenance.auto', 'false', 'the same'],
  ['color.ui', 'false', "the worker parses git's output: no color codes in it"],
  [
    'trailer.separators',
    ':',
    'the effect ledger reads its `Loopwright-Effect:` trailer as written, whatever the repository says',
  ],
  [
    'advice.graftFileDeprecated',
    'false',
    'no hint about GIT_GRAFT_FILE=/dev/null on stderr (whose first line is the error message)',
  ],
];

/** `-c key=value` for every static override. */
export function staticConfigArgs(): string[] {
  return STATIC_OVERRIDES.flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

/** More overrides than this means the config is not a real repository's (and would overflow the environment): refuse it. */
const MAX_OVERRIDES = 4000;

/**
 * Overrides for every driver-like name the effective config defines (`git config --list -z`
 * output: `key\nvalue\0` or `key\0`), in a stable order:
 * - `filter.<d>.*` → clean, smudge, process empty and required=false (the content is used as is);
 * - `diff.<d>.*` → command and textconv empty, cachetextconv=false;
 * - `merge.<d>.*` → driver `exit 1`, a shell builtin, so a merge that would use it reports a
 *   conflict (git 2.39 fails the whole merge with "failure to merge" on an empty driver);
 * - `credential.<url>.*` → helper empty; `pager.<cmd>` → false; `protocol.<name>.allow` → never;
 * - `trailer.<t>.*` → command and cmd empty; `difftool.<t>.*`, `mergetool.<t>.*` → cmd empty;
 * - `hook.<name>.*` (config-defined hooks, git 2.54+) → enabled=false and event empty.
 * Throws when the config defines implausibly many names (the environment would overflow).
 */
export function driverOverrides(listing: string): Array<[string, string]> {
  const out = new Map<string, string>();
  for (const entry of listing.split('\0')) {
    const key = entry.split('\n', 1)[0] ?? '';
    const m = /^([a-z0-9-]+)\.(.+)\.([a-z0-9-]+)$/i.exec(key);
    if (m) {
      const section = must(m[1], 'the pattern requires a section');
      const sub = must(m[2], 'the pattern requires a subsection');
      for (const [variable, value] of subsectionOverrides(section.toLowerCase()))
        out.set(`${section.toLowerCase()}.${sub}.${variable}`, value);
      continue;
    }
    const two = /^(pager)\.([a-z0-9-]+)$/i.exec(key);
    if (two) out.set(`pager.${must(two[2], 'the pattern requires a name').toLowerCase()}`, 'false');
  }
  if (out.size > MAX_OVERRIDES) {
    throw new Error(
      `the repository's config names so many drivers that they need ${out.size} overrides (at most ${MAX_OVERRIDES}): refusing to run git on it`,
    );
  }
  return [...out];
}

function subsectionOverrides(section: string): Array<[string, string]> {
  switch (section) {
    case 'filter':
      return [
        ['clean', ''],
        ['smudge', ''],
        ['process', ''],
        ['required', 'false'],
      ];
    case 'diff':
      return [
        ['command', ''],
        ['textconv', ''],
        ['cachetextconv', 'false'],
      ];
    case 'merge':
      return [['driver', 'exit 1']];
    case 'credential':
      return [['helper', '']];
    case 'protocol':
      return [['allow', 'never']];
    case 'trailer':
      return [
        ['command', ''],
        ['cmd', ''],
      ];
    case 'hook':
      return [
        ['enabled', 'false'],
        ['event', ''],
      ];
    case 'difftool':
    case 'mergetool':
      return [['cmd', '']];
    default:
      return [];
  }
}

/** The `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` variables for `overrides`. */
export function configEnv(overrides: Array<[string, string]>): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(overrides.length) };
  overrides.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}
