import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { commitWorkspace, prepareWorkspace } from '../../activities/agent/workspace';
import { applyGitCommit } from '../../activities/effects';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { CORPUS_FILES, writeFiles } from '../gate/corpus-repo';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { git } from '../helpers/git';

/**
 * An approved change whose landing is refused because the target's checkout cannot take it (the
 * user's uncommitted edit, an untracked file where the change adds one) never lands: nothing of
 * the run's may then be in the target's object store, which every later L2 run's sandbox
 * borrows and reads (land.ts: "a conflict or a refusal leaves nothing of the run's in the
 * target's store"). The effect used to copy the change's objects into the target before it
 * looked at the checkout, so a later L2 agent read the refused change there.
 */
const REFUSED = 'tok-refused-landing-3c9d71';
const UNTRACKED_REFUSED = 'tok-refused-untracked-8e02af';

let dir: string;
let repo: string;
let worktrees: string;
let sandbox: Sandbox;

/** An L2 run whose branch holds one commit writing `files`. */
async function l2Run(workflowId: string, files: Record<string, string>): Promise<string> {
  const ws = await prepareWorkspace(worktrees, { workflowId, workspace: repo, autonomy: 'L2' });
  writeFiles(ws.root, files);
  await commitWorkspace({ root: ws.root, branch: ws.branch!, message: `loopwright: attempt 1 of ${workflowId}` });
  return ws.branch!;
}

const effect = (branch: string, key: string) => applyGitCommit({ key, repo, branch, message: 'Fix add' }, worktrees);

/** What a later L2 run's agent reads of the objects its repository borrows (git, and the loose files). */
async function laterL2Reads(): Promise<string> {
  const l2 = (await prepareWorkspace(worktrees, { workflowId: 'fix-test/later', workspace: repo, autonomy: 'L2' }))
    .root;
  return runShell(
    toolContext(sandbox, l2, ['sh'], 60_000),
    [
      'set +e',
      'git cat-file --batch-all-objects --batch',
      'for alt in $(cat .git/objects/info/alternates); do',
      '  find "$alt" -name "*.pack" | while read p; do git verify-pack -v "$p" 2>/dev/null | while read id rest; do git cat-file -p $id 2>/dev/null; done; done',
      'done',
      'true',
    ].join('\n'),
  );
}

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-refused-landing-')));
  repo = path.join(dir, 'repo');
  mkdirSync(repo);
  writeFiles(repo, CORPUS_FILES);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  worktrees = path.join(dir, 'home', 'worktrees');
  sandbox = sandboxIn(dir);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('a landing the checkout refuses leaves nothing of the run’s in the target’s store', () => {
  test('the user’s uncommitted edit refuses the effect, and a later L2 agent finds none of the change', async () => {
    const branch = await l2Run('fix-test/dirty', {
      'src/math.js': CORPUS_FILES['src/math.js']!.replace('return a - b;', `return a + b; // ${REFUSED}`),
    });
    const main = git(repo, 'rev-parse', 'main');
    writeFileSync(path.join(repo, 'package.json'), '{}\n');
    await expect(effect(branch, 'fix-test/dirty/commit/1')).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining('has uncommitted changes (M package.json'),
    });
    expect(git(repo, 'rev-parse', 'main')).toBe(main);
    const seen = await laterL2Reads();
    expect(seen).toContain('return a - b;');
    expect(seen).not.toContain(REFUSED);
    // Once the checkout is clean again, the same effect lands (its objects come in then).
    git(repo, 'checkout', '--', 'package.json');
    const landed = await effect(branch, 'fix-test/dirty/commit/1');
    expect(landed).toMatchObject({ target: 'main', alreadyApplied: false, checkout: { state: 'updated' } });
    expect(git(repo, 'show', 'main:src/math.js')).toContain(REFUSED);
  }, 60_000);

  test('an untracked file of the user’s where the change adds one refuses it, and the change stays out too', async () => {
    const branch = await l2Run('fix-test/untracked', { 'NEW.md': `from the run ${UNTRACKED_REFUSED}\n` });
    writeFileSync(path.join(repo, 'NEW.md'), 'mine\n');
    await expect(effect(branch, 'fix-test/untracked/commit/1')).rejects.toMatchObject({
      type: 'EffectError',
      message: expect.stringContaining("Untracked working tree file 'NEW.md' would be overwritten"),
    });
    expect(await laterL2Reads()).not.toContain(UNTRACKED_REFUSED);
  }, 60_000);
});
