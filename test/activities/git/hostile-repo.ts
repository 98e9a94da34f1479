import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSampleRepo } from '../../../loops/fixtures/sample-repo';

/** Every hook git knows (githooks(5), git 2.39) and the config-hook name of git 2.54. */
export const HOOK_NAMES = [
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'p4-changelist',
  'p4-prepare-changelist',
  'p4-post-changelist',
  'p4-pre-submit',
  'post-index-change',
];

/** Where the hooks of a hostile repository are: git's own folder, or a `core.hooksPath` inside the work tree. */
export type HookPlace = '.git/hooks' | 'core.hooksPath';

export interface HostileRepo {
  /** The repository (the sample repository of the fix-test loop, main checked out, clean). */
  repo: string;
  /** Every hostile program appends a line here when it runs: it must never exist. */
  marker: string;
  /** What ran, one line per run ('' when nothing did). */
  ran(): string;
}

const made: string[] = [];

/** Removes every hostile repository this test file made (call it in afterAll). */
export function removeHostileRepos(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Plain git, with no protection: only for setting up, and for proving the repository is armed. */
export function plainGit(cwd: string, ...args: string[]): string {
  // This process's environment as the test sees it (jest's process.env is not the real one).
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env },
  });
}

/**
 * The fix-test sample repository, then armed: hooks (every name) in `.git/hooks` or in a
 * `core.hooksPath` folder inside the repository; core.fsmonitor set directly (.git/hooks case)
 * or through an include.path file (core.hooksPath case); `* filter=x diff=x merge=x` in a
 * committed .gitattributes with clean/smudge/process filters (required), an external diff, a
 * textconv and diff command, a merge driver; `*.js filter=y` with y defined only by an
 * `includeIf "onbranch:loopwright/**"` file (so only a run's worktree sees it); `*.json filter=z`
 * with z in config.worktree; gpg signing with a hostile gpg.program; hostile pager, editor,
 * askpass, ssh, credential helper, alternate-refs command, trailer command and a git 2.54
 * config hook; protocol.ext allowed; low gc.auto. Every program is a copy of one script
 * (named after its role) that appends `<role> <args>` and its environment's secret to the marker.
 */
export function createHostileRepo(place: HookPlace): HostileRepo {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-hostile-'));
  made.push(dir);
  const repo = createSampleRepo(path.join(dir, 'repo'));
  const marker = path.join(dir, 'ran.log');
  const bin = path.join(dir, 'evil');
  mkdirSync(bin);
  const evil = (role: string): string => {
    const file = path.join(bin, role);
    writeFileSync(file, `#!/bin/sh\necho "${role} $* secret=\${LW_TEST_SECRET_TOKEN:-none}" >> '${marker}'\ncat\n`);
    chmodSync(file, 0o755);
    return file;
  };
  // Committed before the config below is set, with plain git (which would run the drivers).
  writeFileSync(path.join(repo, '.gitattributes'), '* filter=x diff=x merge=x\n*.js filter=y\n*.json filter=z\n');
  const writeHooks = (hooksDir: string) => {
    mkdirSync(hooksDir, { recursive: true });
    for (const name of HOOK_NAMES) {
      writeFileSync(path.join(hooksDir, name), `#!/bin/sh\nexec '${evil(`hook-${name}`)}' "$@" </dev/null\n`);
      chmodSync(path.join(hooksDir, name), 0o755);
    }
  };
  // A hooksPath folder inside the repository is committed: every worktree of it has the hooks.
  if (place === 'core.hooksPath') writeHooks(path.join(repo, '.githooks'));
  plainGit(repo, 'add', '-A');
  plainGit(
    repo,
    '-c',
    'user.name=Sample',
    '-c',
    'user.email=sample@localhost',
    'commit',
    '-q',
    '-m',
    'attributes and hooks',
  );
  if (place === '.git/hooks') writeHooks(path.join(repo, '.git', 'hooks'));

  const set = (file: string, key: string, value: string) => plainGit(repo, 'config', '--file', file, key, value);
  const config = path.join(repo, '.git', 'config');
  const included = path.join(repo, '.git', 'included.cfg');
  const onBranch = path.join(repo, '.git', 'on-branch.cfg');
  if (place === 'core.hooksPath') {
    set(config, 'core.hooksPath', '.githooks');
    set(included, 'core.fsmonitor', evil('fsmonitor'));
    set(config, 'include.path', included);
  } else {
    set(config, 'core.fsmonitor', evil('fsmonitor'));
  }
  for (const [key, role] of [
    ['filter.x.clean', 'filter-x-clean'],
    ['filter.x.smudge', 'filter-x-smudge'],
    ['filter.x.process', 'filter-x-process'],
    ['diff.external', 'diff-external'],
    ['diff.x.textconv', 'diff-x-textconv'],
    ['diff.x.command', 'diff-x-command'],
    ['merge.x.driver', 'merge-x-driver'],
    ['gpg.program', 'gpg-program'],
    ['gpg.openpgp.program', 'gpg-openpgp'],
    ['gpg.ssh.program', 'gpg-ssh'],
    ['gpg.x509.program', 'gpg-x509'],
    ['core.pager', 'core-pager'],
    ['pager.log', 'pager-log'],
    ['pager.status', 'pager-status'],
    ['pager.diff', 'pager-diff'],
    ['core.editor', 'core-editor'],
    ['sequence.editor', 'sequence-editor'],
    ['core.askPass', 'askpass'],
    ['core.sshCommand', 'ssh-command'],
    ['core.alternateRefsCommand', 'alternate-refs'],
    ['trailer.x.command', 'trailer-command'],
    ['hook.evil.command', 'config-hook'],
    ['interactive.diffFilter', 'diff-filter'],
  ] as const) {
    set(config, key, key === 'merge.x.driver' ? `${evil(role)} %O %A %B` : evil(role));
  }
  set(config, 'credential.helper', `!${evil('credential-helper')}`);
  for (const [key, value] of [
    ['filter.x.required', 'true'],
    ['commit.gpgSign', 'true'],
    ['tag.gpgSign', 'true'],
    ['user.signingKey', 'evil'],
    ['log.showSignature', 'true'],
    ['protocol.ext.allow', 'always'],
    ['gc.auto', '1'],
    ['hook.evil.event', 'pre-commit'],
    ['submodule.recurse', 'true'],
    ['status.submoduleSummary', 'true'],
    ['color.ui', 'always'],
  ] as const) {
    set(config, key, value);
  }
  set(onBranch, 'filter.y.clean', evil('filter-y-clean'));
  set(onBranch, 'filter.y.smudge', evil('filter-y-smudge'));
  set(config, 'includeIf.onbranch:loopwright/**.path', onBranch);
  set(config, 'extensions.worktreeConfig', 'true');
  set(path.join(repo, '.git', 'config.worktree'), 'filter.z.clean', evil('filter-z-clean'));
  set(path.join(repo, '.git', 'config.worktree'), 'filter.z.smudge', evil('filter-z-smudge'));
  return { repo, marker, ran: () => (existsSync(marker) ? readFileSync(marker, 'utf8') : '') };
}
