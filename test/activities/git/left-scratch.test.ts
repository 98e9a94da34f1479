import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkOutTree } from '../../../activities/checks/tests/trees';
import { landingObjects } from '../../../activities/git/land';
import { workerGit } from '../../../activities/git/worker-git';
import { baseRepo, git } from '../../helpers/git';
import { gone, goneProcess, here, startOf } from '../../helpers/processes';
import { runShell, sandboxIn, toolContext } from '../../helpers/sandbox-tools';

/**
 * A worker killed during a gate or a landing leaves whole checkouts of the repository and
 * scratch stores behind (server/left-behind.ts): the next gate checkout or landing on the machine
 * removes those whose worker process is gone, and never a live worker's.
 */
let dir: string;
let repo: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-left-scratch-')));
  repo = path.join(dir, 'repo');
  baseRepo(repo);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const live = () => ({ ...here(), pid: process.pid, start: startOf(process.pid) });

/** A folder at `at` as a worker leaves it, with a checkout or store inside and the owner it names in `ownerFile`. */
function leftAt(at: string, ownerFile: string, owner: object): string {
  mkdirSync(path.join(at, 'inside'), { recursive: true });
  writeFileSync(path.join(at, 'inside', 'file'), 'x');
  writeFileSync(path.join(at, ownerFile), JSON.stringify(owner));
  return at;
}

test('a gate checkout removes the checkouts a killed worker left in any run’s folder, and keeps a live worker’s', async () => {
  const runs = path.join(dir, 'gate');
  const dead = leftAt(path.join(runs, 'other-run', 'attempt-1-candidate-AbC123'), 'owner', await goneProcess());
  const deadHere = leftAt(path.join(runs, 'this-run', 'attempt-1-overlay-XyZ789'), 'owner', await goneProcess());
  const alive = leftAt(path.join(runs, 'third-run', 'attempt-2-candidate-QwE456'), 'owner', live());
  const head = git(repo, 'rev-parse', 'HEAD');
  const made = await checkOutTree(
    repo,
    git(repo, 'rev-parse', 'HEAD^{tree}'),
    head,
    path.join(runs, 'this-run'),
    'candidate',
  );
  try {
    expect(readFileSync(path.join(made.dir, 'a.txt'), 'utf8')).toBe('a\n');
    expect(JSON.parse(readFileSync(path.join(path.dirname(made.dir), 'owner'), 'utf8'))).toEqual(live());
    await gone(dead, deadHere);
    expect([existsSync(dead), existsSync(deadHere), existsSync(alive)]).toEqual([false, false, true]);
    // The tests the gate runs in the checkout (code the agent wrote) cannot rename the owner: the
    // folder beside the checkout is not in their sandbox, so they can neither name a dead process
    // (for a sweep to remove a live checkout) nor plant a folder for one to remove.
    const owner = readFileSync(path.join(path.dirname(made.dir), 'owner'), 'utf8');
    const tried = await runShell(
      toolContext(sandboxIn(dir), made.dir),
      `echo '{"pid":1}' > ../owner; mkdir -p ../../planted-x; ls -a .. 2>&1; echo end`,
    );
    expect(tried).toContain('end');
    expect(readFileSync(path.join(path.dirname(made.dir), 'owner'), 'utf8')).toBe(owner);
    expect(existsSync(path.join(runs, 'planted-x'))).toBe(false);
  } finally {
    await made.remove();
  }
  expect(existsSync(path.dirname(made.dir))).toBe(false);
});

test('a landing removes the scratch stores a killed worker left, and keeps a live worker’s', async () => {
  const run = path.join(dir, 'run');
  git(dir, 'clone', '-q', repo, run);
  const dead = leftAt(path.join(tmpdir(), `loopwright-land-test-${process.pid}-dead`), 'owner', await goneProcess());
  const alive = leftAt(path.join(tmpdir(), `loopwright-land-test-${process.pid}-live`), 'owner', live());
  try {
    const objects = await landingObjects(repo, run);
    const scratch = path.dirname(objects.env.GIT_OBJECT_DIRECTORY!);
    expect(path.basename(scratch)).toMatch(/^loopwright-land-/);
    expect(JSON.parse(readFileSync(path.join(scratch, 'owner'), 'utf8'))).toEqual(live());
    // The scratch store works: what is written goes there, not into the target.
    const id = (
      await workerGit(repo, ['hash-object', '-w', '--stdin'], { env: objects.env, input: 'landing\n' })
    ).trim();
    expect(existsSync(path.join(objects.env.GIT_OBJECT_DIRECTORY!, id.slice(0, 2), id.slice(2)))).toBe(true);
    expect(() => git(repo, 'cat-file', '-e', id)).toThrow();
    await objects.remove();
    expect(existsSync(scratch)).toBe(false);
    await gone(dead);
    expect([existsSync(dead), existsSync(alive)]).toEqual([false, true]);
  } finally {
    rmSync(dead, { recursive: true, force: true });
    rmSync(alive, { recursive: true, force: true });
  }
});
