import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { prepareWorkspace } from '../../activities/agent/workspace';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { CORPUS_FILES, writeFiles } from '../gate/corpus-repo';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { git } from '../helpers/git';

/**
 * OPEN: an in-place run's checks write nothing into the target's object store
 * (git/private-objects.ts), but git "freshens" every object it is asked to write that a store
 * it borrows has already: it sets that file's mtime to now (`utime`, so a later prune keeps
 * it), the loose object's or the whole pack's. The private store borrows the target's, so each
 * file of the user's working tree whose content the target already holds (any version in its
 * history, a secret once committed and removed) touches that object in the target's store, and
 * an L2 agent, whose sandbox mounts that store read-only, reads the mtimes: an oracle for "the
 * in-place working tree holds this known content now" (and for when the in-place checks ran).
 * It was so before 8d1a0b8 too (the checks wrote into the target's store then). git has no
 * setting that turns freshening off, and a loose copy in the private store does not help (packs,
 * the target's included, are freshened before a loose object is looked for); closing it needs
 * the target's store out of the writer's reach (a read-only mount for the worker's git, say) or
 * every object a check may meet packed into the private store first. These fail (the mtimes
 * move) until then: whoever closes it makes them plain tests.
 */
const OLD_SECRET = 'TOKEN=tok-once-committed-71c0de\n';

let dir: string;
let repo: string;
let sandbox: Sandbox;
let l2: string;

/** What the L2 agent sees: the mtime of each file of the target's store that holds the old secret. */
const l2Looks = (blob: string) =>
  runShell(
    toolContext(sandbox, l2, ['sh'], 30_000),
    [
      'alt=$(cat .git/objects/info/alternates)',
      `stat -c "%n %Y" "$alt/${blob.slice(0, 2)}/${blob.slice(2)}" 2>/dev/null`,
      'for p in "$alt"/pack/*.pack; do [ -e "$p" ] && stat -c "%n %Y" "$p"; done',
      'true',
    ].join('\n'),
  );

beforeEach(async () => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-freshen-')));
  repo = path.join(dir, 'repo');
  mkdirSync(repo);
  writeFiles(repo, { ...CORPUS_FILES, 'old.env': OLD_SECRET });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base, with a secret');
  git(repo, 'rm', '-q', 'old.env');
  git(repo, 'commit', '-q', '-m', 'the secret removed (still in history)');
  sandbox = sandboxIn(dir);
  l2 = (
    await prepareWorkspace(path.join(dir, 'home', 'worktrees'), { workflowId: 'w/l2', workspace: repo, autonomy: 'L2' })
  ).root;
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Every file of the target's store a year old (so a change of its mtime shows, whatever the clock's resolution). */
function ageStore(): void {
  const old = new Date(Date.now() - 365 * 24 * 3600 * 1000).toISOString();
  execFileSync('find', [path.join(repo, '.git', 'objects'), '-type', 'f', '-exec', 'touch', '-d', old, '{}', '+']);
}

/** The old secret back in the in-place working tree (untracked), and an in-place change policy check. */
async function inPlaceCheckWithOldSecret(): Promise<void> {
  writeFileSync(path.join(repo, 'mine.env'), OLD_SECRET);
  const verdict = await runDiffPolicyCheck({
    check: { kind: 'diff', name: 'policy', allowedPaths: ['*.env'] },
    root: repo,
    baseRef: 'HEAD',
  });
  expect(verdict.evidence).toContain('mine.env');
}

describe('OPEN: an L2 agent reads which of the target’s objects an in-place check hashed (freshened mtimes)', () => {
  const blob = () => execFileSync('git', ['hash-object', '--stdin'], { input: OLD_SECRET, encoding: 'utf8' }).trim();

  test.failing('a loose object of the target’s keeps its mtime', async () => {
    ageStore();
    const before = await l2Looks(blob());
    await inPlaceCheckWithOldSecret();
    expect(before).toMatch(/ \d+\n/);
    expect(await l2Looks(blob())).toBe(before);
  });

  test.failing('a pack of the target’s keeps its mtime', async () => {
    git(repo, 'gc', '-q');
    ageStore();
    const before = await l2Looks(blob());
    await inPlaceCheckWithOldSecret();
    expect(before).toMatch(/\.pack \d+\n/);
    expect(await l2Looks(blob())).toBe(before);
  });
});
