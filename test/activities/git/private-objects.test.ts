import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { objectScopeAt } from '../../../activities/git/object-scope';
import { withPrivateObjects } from '../../../activities/git/private-objects';
import { snapshotWorkingTree } from '../../../activities/git/snapshot';
import { workerGit } from '../../../activities/git/worker-git';
import { workerTmpDir } from '../../../server/private-folder';
import { baseRepo, git } from '../../helpers/git';
import { gone, goneProcess, here, startOf } from '../../helpers/processes';

let dir: string;
let repo: string;

const inRepo = (cwd: string, id: string) => {
  try {
    git(cwd, 'cat-file', '-e', id);
    return true;
  } catch {
    return false;
  }
};

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-private-objects-')));
  repo = path.join(dir, 'repo');
  baseRepo(repo);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('withPrivateObjects', () => {
  test('what is written in the root goes to the private store, every reader there sees it, and it is gone after', async () => {
    writeFileSync(path.join(repo, 'new.txt'), 'private\n');
    let store = '';
    const tree = await withPrivateObjects(repo, async () => {
      store = objectScopeAt(repo)!.repository;
      const t = await snapshotWorkingTree(repo);
      // Readers in the root find it (and the repository's own objects through the alternate).
      expect(await workerGit(repo, ['show', `${t}:new.txt`])).toBe('private\n');
      expect(await workerGit(repo, ['show', 'HEAD:a.txt'])).toBe('a\n');
      expect(inRepo(repo, t)).toBe(false);
      return t;
    });
    expect(store).toContain(path.join('loopwright', 'objects', 'store-'));
    expect(existsSync(store)).toBe(false);
    expect(inRepo(repo, tree)).toBe(false);
    // Outside the scope the same snapshot is written into the repository, as before (an L2 run's own).
    expect(await snapshotWorkingTree(repo)).toBe(tree);
    expect(inRepo(repo, tree)).toBe(true);
  });

  test('the store is removed when the work throws too', async () => {
    let store = '';
    await expect(
      withPrivateObjects(repo, async () => {
        store = objectScopeAt(repo)!.repository;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(existsSync(store)).toBe(false);
  });

  test('applies to its root only: a repository nested in it, and a caller that names a store, are left as they are', async () => {
    const nested = path.join(repo, 'vendor', 'lib');
    mkdirSync(nested, { recursive: true });
    git(nested, 'init', '-q', '-b', 'main');
    const explicit = path.join(dir, 'explicit');
    mkdirSync(explicit);
    await withPrivateObjects(repo, async () => {
      const inNested = (await workerGit(nested, ['hash-object', '-w', '--stdin'], { input: 'nested\n' })).trim();
      expect(inRepo(nested, inNested)).toBe(true);
      const named = (
        await workerGit(repo, ['hash-object', '-w', '--stdin'], {
          input: 'named\n',
          env: { GIT_OBJECT_DIRECTORY: explicit },
        })
      ).trim();
      expect(existsSync(path.join(explicit, named.slice(0, 2), named.slice(2)))).toBe(true);
      expect(inRepo(repo, named)).toBe(false);
    });
  });

  test('a root outside any repository runs the work unscoped (it fails its own way)', async () => {
    const plain = path.join(dir, 'plain');
    mkdirSync(plain);
    await expect(withPrivateObjects(plain, async () => objectScopeAt(plain))).resolves.toBeUndefined();
  });

  test('a store a killed worker left goes with the next check; a live worker’s stays; a check’s own names this worker', async () => {
    const parent = workerTmpDir('objects');
    const leftBy = async (name: string, owner: object) => {
      const at = path.join(parent, `store-test-${process.pid}-${name}`);
      mkdirSync(path.join(at, '.git'), { recursive: true });
      writeFileSync(path.join(at, '.git', 'loopwright-owner'), JSON.stringify(owner));
      return at;
    };
    const dead = await leftBy('dead', await goneProcess());
    const live = await leftBy('live', { ...here(), pid: process.pid, start: startOf(process.pid) });
    try {
      const owner = await withPrivateObjects(repo, async () =>
        JSON.parse(readFileSync(path.join(objectScopeAt(repo)!.repository, '.git', 'loopwright-owner'), 'utf8')),
      );
      expect(owner).toEqual({ ...here(), pid: process.pid, start: startOf(process.pid) });
      await gone(dead);
      expect([existsSync(dead), existsSync(live)]).toEqual([false, true]);
    } finally {
      rmSync(dead, { recursive: true, force: true });
      rmSync(live, { recursive: true, force: true });
    }
  });
});
