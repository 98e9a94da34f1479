import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { objectScopeAt } from '../../../activities/git/object-scope';
import { withPrivateObjects } from '../../../activities/git/private-objects';
import { snapshotWorkingTree } from '../../../activities/git/snapshot';
import { workerGit } from '../../../activities/git/worker-git';
import { workerTmpDir } from '../../../server/private-folder';
import { git } from '../../helpers/git';

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
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'base');
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

  describe('stores left behind', () => {
    const parent = () => workerTmpDir('objects');
    const startOf = (pid: number) => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
    };
    const me = () => ({
      boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      pidNamespace: readlinkSync('/proc/self/ns/pid'),
    });
    const TWO_DAYS = 2 * 24 * 3600;
    /** A store as a worker leaves it: its git folder, the owner it names (if any), its age in seconds. */
    const leftStore = (name: string, owner: object | undefined, ageSeconds = 0) => {
      const at = path.join(parent(), `store-test-${process.pid}-${name}`);
      mkdirSync(path.join(at, '.git', 'objects'), { recursive: true });
      if (owner) writeFileSync(path.join(at, '.git', 'loopwright-owner'), JSON.stringify(owner));
      const t = Date.now() / 1000 - ageSeconds;
      utimesSync(at, t, t);
      return at;
    };
    let sleeper: ReturnType<typeof spawn> | undefined;
    afterEach(() => {
      sleeper?.kill('SIGKILL');
      for (const name of [
        'dead',
        'live',
        'reused',
        'other-boot',
        'unowned-old',
        'unowned-new',
        'elsewhere-new',
        'elsewhere-old',
      ])
        rmSync(path.join(parent(), `store-test-${process.pid}-${name}`), { recursive: true, force: true });
    });

    test('a store whose worker is gone is removed by the next check, however young; a live worker’s stays, however old', async () => {
      const gone = spawn('true');
      const goneStart = await new Promise<string>((resolve) => gone.on('spawn', () => resolve(startOf(gone.pid!))));
      await new Promise((resolve) => gone.on('exit', resolve));
      sleeper = spawn('sleep', ['60']);
      await new Promise((resolve) => sleeper!.on('spawn', resolve));
      const live = { ...me(), pid: sleeper.pid!, start: startOf(sleeper.pid!) };
      const stores = {
        dead: leftStore('dead', { ...me(), pid: gone.pid!, start: goneStart }),
        live: leftStore('live', live, TWO_DAYS),
        // A pid taken again by another process: not the owner.
        reused: leftStore('reused', { ...live, start: String(Number(live.start) - 1) }),
        'other-boot': leftStore('other-boot', { ...live, boot: 'another-boot' }),
        'unowned-old': leftStore('unowned-old', undefined, TWO_DAYS),
        // Being made right now (no owner yet).
        'unowned-new': leftStore('unowned-new', undefined),
        // A worker of another pid namespace sharing the folder: judged by age only.
        'elsewhere-new': leftStore('elsewhere-new', { ...live, pidNamespace: 'pid:[1]', pid: 1 }),
        'elsewhere-old': leftStore('elsewhere-old', { ...live, pidNamespace: 'pid:[1]', pid: 1 }, TWO_DAYS),
      };
      await withPrivateObjects(repo, async () => undefined);
      const removed = ['dead', 'reused', 'other-boot', 'unowned-old', 'elsewhere-old'] as const;
      for (let i = 0; i < 100 && removed.some((k) => existsSync(stores[k])); i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(Object.fromEntries(Object.entries(stores).map(([k, at]) => [k, existsSync(at)]))).toEqual({
        dead: false,
        live: true,
        reused: false,
        'other-boot': false,
        'unowned-old': false,
        'unowned-new': true,
        'elsewhere-new': true,
        'elsewhere-old': false,
      });
    });

    test('a check’s own store names this worker while it runs', async () => {
      const owner = await withPrivateObjects(repo, async () =>
        JSON.parse(readFileSync(path.join(objectScopeAt(repo)!.repository, '.git', 'loopwright-owner'), 'utf8')),
      );
      expect(owner).toEqual({ ...me(), pid: process.pid, start: startOf(process.pid) });
    });
  });
});
