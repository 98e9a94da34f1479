import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { commitTree, moveRef } from '../../../activities/git/commit-tree';
import { STATIC_OVERRIDES } from '../../../activities/git/overrides';
import { snapshotWorkingTree } from '../../../activities/git/snapshot';
import { workerGit } from '../../../activities/git/worker-git';
import { createHostileRepo, plainGit, removeHostileRepos } from './hostile-repo';

/**
 * workerGit against a repository pre-seeded with hostile hooks and config (hostile-repo.ts):
 * the repository is armed (plain git runs its programs, which see the worker's secret), and
 * through workerGit every program key reads as neutralized, no transport runs, and submodule
 * repositories are not entered. Two controls show why the callers' flags and choices matter.
 */
const SECRET = 'sk-lw-test-secret-do-not-leak';
const saved = process.env.LW_TEST_SECRET_TOKEN;

beforeEach(() => {
  process.env.LW_TEST_SECRET_TOKEN = SECRET;
});
afterAll(removeHostileRepos);
afterEach(() => {
  if (saved === undefined) delete process.env.LW_TEST_SECRET_TOKEN;
  else process.env.LW_TEST_SECRET_TOKEN = saved;
});

describe('against a hostile repository', () => {
  test('the repository is armed: plain git runs its fsmonitor, filters, external diff and hooks', () => {
    const hostile = createHostileRepo('.git/hooks');
    writeFileSync(path.join(hostile.repo, 'package.json'), '{}\n');
    // A tracked file of filter x changed too: git cleans it whatever the index's timestamps say
    // (an unchanged, racily clean file is cleaned only when git cannot trust its stat).
    appendFileSync(path.join(hostile.repo, '.gitattributes'), '# touched\n');
    // The process filter speaks no protocol and would stop git before the others run.
    plainGit(hostile.repo, 'config', '--unset', 'filter.x.process');
    for (const args of [['status', '--porcelain'], ['diff'], ['commit', '-qam', 'x']]) {
      try {
        plainGit(hostile.repo, ...args);
      } catch {
        // expected
      }
    }
    const ran = hostile.ran();
    for (const role of [
      'fsmonitor',
      'filter-x-clean',
      'filter-z-clean',
      'diff-x-command',
      'hook-pre-commit',
      'hook-commit-msg',
      'hook-post-index-change',
      'gpg-openpgp',
    ])
      expect(ran).toContain(role);
    expect(ran).toContain(`secret=${SECRET}`);
  });

  test.each(['.git/hooks', 'core.hooksPath'] as const)(
    'every program key reads as neutralized, including what include.path and config.worktree set (hooks in %s)',
    async (place) => {
      const hostile = createHostileRepo(place);
      const get = async (key: string) => (await workerGit(hostile.repo, ['config', '--get', key])).replace(/\n$/, '');
      for (const [key, value] of STATIC_OVERRIDES) expect([key, await get(key)]).toEqual([key, value]);
      for (const key of [
        'filter.x.clean',
        'filter.x.smudge',
        'filter.x.process',
        'filter.z.clean',
        'filter.z.smudge',
        'diff.x.textconv',
        'diff.x.command',
        'pager.log',
        'trailer.x.command',
      ]) {
        expect([key, await get(key)]).toEqual([key, key === 'pager.log' ? 'false' : '']);
      }
      expect(await get('filter.x.required')).toBe('false');
      expect(await get('merge.x.driver')).toBe('exit 1');
      expect(hostile.ran()).toBe('');
    },
  );

  test('drivers are neutralized per repository state: why prepareWorkspace checks out inside the new worktree', async () => {
    // filter y exists only for `includeIf "onbranch:loopwright/**"`: the repository (on main) does
    // not define it, the new worktree (on loopwright/...) does. `worktree add` checking out from
    // the repository runs it; prepareWorkspace adds with --no-checkout and checks out in the worktree.
    const hostile = createHostileRepo('.git/hooks');
    await workerGit(hostile.repo, [
      'worktree',
      'add',
      '-b',
      'loopwright/x',
      path.join(path.dirname(hostile.repo), 'wt'),
      'HEAD',
    ]);
    expect(hostile.ran()).toContain('filter-y-smudge');
  });

  test('no transport runs, even one the repository allows (ext:: would run a command)', async () => {
    const hostile = createHostileRepo('.git/hooks');
    const touched = path.join(path.dirname(hostile.repo), 'fetched');
    await expect(workerGit(hostile.repo, ['fetch', `ext::sh -c touch% ${touched}`])).rejects.toThrow(
      /transport 'ext' not allowed/,
    );
    await expect(workerGit(hostile.repo, ['fetch', path.dirname(hostile.repo)])).rejects.toThrow(
      /transport 'file' not allowed/,
    );
    expect(existsSync(touched)).toBe(false);
    expect(hostile.ran()).toBe('');
  });

  test('a checked-out submodule whose own repository has a hostile filter is not entered by status, diff or a snapshot', async () => {
    const hostile = createHostileRepo('.git/hooks');
    const sub = path.join(hostile.repo, 'vendor');
    mkdirSync(sub);
    plainGit(sub, 'init', '-q');
    writeFileSync(path.join(sub, '.gitattributes'), '* filter=s\n');
    writeFileSync(path.join(sub, 'lib.js'), 'lib\n');
    plainGit(sub, 'add', '-A');
    plainGit(sub, '-c', 'user.name=S', '-c', 'user.email=s@localhost', 'commit', '-q', '-m', 'lib');
    const head = plainGit(sub, 'rev-parse', 'HEAD').trim();
    // The superproject records it (plumbing only), then its file changes, same size, new mtime.
    await workerGit(hostile.repo, ['update-index', '--add', '--cacheinfo', `160000,${head},vendor`]);
    const tree = (await workerGit(hostile.repo, ['write-tree'])).trim();
    const main = (await workerGit(hostile.repo, ['rev-parse', 'HEAD'])).trim();
    await moveRef(
      hostile.repo,
      'refs/heads/main',
      await commitTree(hostile.repo, tree, [main], 'vendor'),
      main,
      'test',
    );
    plainGit(sub, 'config', 'filter.s.clean', path.join(path.dirname(hostile.marker), 'evil', 'filter-x-clean'));
    writeFileSync(path.join(sub, 'lib.js'), 'LIB\n');
    await workerGit(hostile.repo, ['status', '--porcelain', '--ignore-submodules=dirty']);
    await workerGit(hostile.repo, ['diff', '--no-ext-diff', '--no-textconv', '--ignore-submodules=dirty', 'HEAD']);
    const snapshot = await snapshotWorkingTree(hostile.repo);
    expect(await workerGit(hostile.repo, ['ls-tree', snapshot, 'vendor'])).toBe(`160000 commit ${head}\tvendor\n`);
    expect(hostile.ran()).toBe('');
    // Why the flag matters: git entering the submodule's repository runs that repository's filter.
    await workerGit(hostile.repo, ['status', '--porcelain', '--ignore-submodules=none']);
    expect(hostile.ran()).toContain('filter-x-clean');
    expect(hostile.ran()).not.toContain(SECRET);
  });
});
