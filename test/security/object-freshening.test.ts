import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { prepareWorkspace } from '../../activities/agent/workspace';
import { runDiffPolicyCheck } from '../../activities/checks/diff-policy';
import { readChange } from '../../activities/checks/judge';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { CORPUS_FAILING_TEST, CORPUS_FILES, CORPUS_FIX, gateTests, writeFiles } from '../gate/corpus-repo';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { git } from '../helpers/git';

/**
 * An in-place run's checks write nothing into the target's object store
 * (git/private-objects.ts), but git "freshens" every object it is asked to write that a store
 * it borrows has already: it sets that file's mtime to now (`utime`, so a later prune keeps
 * it), the loose object's or the whole pack's. The private store borrows the target's, so each
 * file of the user's working tree whose content the target already holds (any version in its
 * history, a secret once committed and removed) would touch that object in the target's store,
 * and an L2 agent, whose sandbox mounts that store read-only, reads the mtimes: an oracle for
 * "the in-place working tree holds this known content now" (and for when the in-place checks
 * ran). git has no setting that turns freshening off, and a loose copy in the private store does
 * not help (packs, the target's included, are looked at first). So the worker's git runs with
 * the borrowed stores mounted read-only while a check's private store is in force
 * (git/read-only-stores.ts): the freshening fails and git writes its own copy into the private
 * store. A read-only mount also keeps the files' access times, so the agent cannot tell which
 * of the target's objects the checks read either. Each check, with the target's objects loose and
 * packed, is looked at here as the L2 agent sees the store (every file's access and modification
 * time, from its sandbox); each failed (the times moved) before the read-only mount.
 */
const OLD_SECRET = 'TOKEN=tok-once-committed-71c0de\n';

let dir: string;
let repo: string;
let base: string;
let sandbox: Sandbox;
let l2: string;

/** What the L2 agent sees of the target's store: every file with its access and modification time. */
const l2Looks = () =>
  runShell(
    toolContext(sandbox, l2, ['sh'], 30_000),
    'for alt in $(cat .git/objects/info/alternates); do find "$alt" -type f -exec stat -c "%n %X %Y" {} + | sort; done',
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
  base = git(repo, 'rev-parse', 'HEAD');
  sandbox = sandboxIn(dir);
  l2 = (
    await prepareWorkspace(path.join(dir, 'home', 'worktrees'), { workflowId: 'w/l2', workspace: repo, autonomy: 'L2' })
  ).root;
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Every file of the target's store a year old, read and written (so any access shows, whatever the clock's resolution). */
function ageStore(): void {
  const old = new Date(Date.now() - 365 * 24 * 3600 * 1000).toISOString();
  execFileSync('find', [path.join(repo, '.git', 'objects'), '-type', 'f', '-exec', 'touch', '-d', old, '{}', '+']);
}

/** The in-place working state each check hashes: a fix with its regression test, and the old secret back (untracked). */
function writeInPlaceAttempt(): void {
  writeFiles(repo, {
    ...CORPUS_FIX,
    'mine.env': OLD_SECRET,
  });
}

/** The in-place checks, each as a run in place calls it, with what shows it did hash the working state. */
const CHECKS: Record<string, () => Promise<void>> = {
  'the change policy': async () => {
    const verdict = await runDiffPolicyCheck({
      check: { kind: 'diff', name: 'policy', allowedPaths: ['*.env', 'src/', 'test/'] },
      root: repo,
      baseRef: base,
    });
    expect(verdict.evidence).toContain('mine.env');
  },
  'the judge reading the change': async () => {
    expect((await readChange({ root: repo, base, commit: null })).patch).toContain('tok-once-committed-71c0de');
  },
  'the tests gate': async () => {
    const verdict = await gateTests(
      'w/l1-gate',
      repo,
      { base, commit: null },
      { command: 'node --test', failingTest: CORPUS_FAILING_TEST },
      sandbox,
    );
    expect(verdict).toMatchObject({ passed: true, sandbox: 'bwrap' });
  },
};

describe('an L2 agent cannot read which of the target’s objects an in-place check hashed or read (their times)', () => {
  for (const [name, check] of Object.entries(CHECKS))
    for (const layout of ['loose', 'packed'] as const)
      test(`${name}, the target’s objects ${layout}`, async () => {
        if (layout === 'packed') git(repo, 'gc', '-q');
        writeInPlaceAttempt();
        ageStore();
        const before = await l2Looks();
        // The store holds the old secret's blob as the layout says (so the check meets it there).
        const blob = execFileSync('git', ['hash-object', '--stdin'], { input: OLD_SECRET, encoding: 'utf8' }).trim();
        if (layout === 'loose') expect(before).toContain(`/${blob.slice(0, 2)}/${blob.slice(2)} `);
        else expect(before).toMatch(/\.pack \d+ \d+\n/);
        await check();
        expect(await l2Looks()).toBe(before);
      }, 120_000);
});
