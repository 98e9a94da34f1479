import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type RunCheckInput } from '../../activities';
import type { ModelClient } from '../../activities/model-port';
import { createFileLedger } from '../../activities/tools/ledger';
import { createFileBlobStore } from '../../activities/transcript/store';
import { snapshotWorkingTree } from '../../activities/git/snapshot';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import type { Verdict } from '../../common/run-record';
import { callTool, runShell, sandboxIn, toolContext, withEnv } from '../helpers/sandbox-tools';

/**
 * A hostile agent against the containment, through the real tools (run_command in the real
 * bubblewrap sandbox, the file tools on the worker's side), for holes beyond those of
 * containment.test.ts, containment-more.test.ts, containment-redteam.test.ts,
 * containment-session9.test.ts and limits.test.ts. Each test here failed on the code before its fix.
 */
const KEY = 'key-51e0a7-of-the-worker';
let dir: string;
let ws: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-session10-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });

const ctx = (sandbox: Sandbox) => toolContext(sandbox, ws, ['sh'], 20_000);

describe('protected paths deeper inside the workspace', () => {
  test('a command that renames a folder above LOOPWRIGHT_HOME or a key file does not carry them out of their masks', async () => {
    // LOOPWRIGHT_HOME's default is <package>/.loopwright: a repository that vendors Loopwright holds it two folders down.
    const home = path.join(ws, 'vendor', 'loopwright', '.loopwright');
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'keys'), `k1=${KEY}\n`);
    const certs = path.join(ws, 'deploy', 'certs');
    mkdirSync(certs, { recursive: true });
    writeFileSync(path.join(certs, 'client.key'), `-----BEGIN PRIVATE KEY-----\n${KEY}\n`);
    writeFileSync(path.join(ws, 'vendor', 'README'), 'vendored\n');
    const vars = { LOOPWRIGHT_HOME: home, TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(certs, 'client.key') };
    await withEnv(vars, async () => {
      const c = ctx(sandboxIn(dir, vars));
      // Every way to take a folder on the way somewhere the next sandbox and the file tools do not mask.
      const moved = await runShell(
        c,
        [
          'mv vendor v2',
          'mv vendor/loopwright vendor/lw2',
          'mv deploy d2',
          'mv deploy/certs deploy/c2',
          'mkdir -p x && mv x vendor',
          'rm -rf vendor/loopwright',
          'true',
        ].join('; '),
      );
      expect(moved).toContain('[exit code 0]');
      const candidates = [
        'v2/loopwright/.loopwright/keys',
        'vendor/lw2/.loopwright/keys',
        'v2/lw2/.loopwright/keys',
        'd2/certs/client.key',
        'deploy/c2/client.key',
        'vendor/loopwright/.loopwright/keys',
        'deploy/certs/client.key',
      ];
      const read = await runShell(c, `cat ${candidates.join(' ')} 2>&1; grep -r "${KEY}" . 2>&1; true`);
      expect(read).not.toContain(KEY);
      for (const p of candidates) expect((await callTool(c, 'read_file', { path: p })).content).not.toContain(KEY);
      // (The pattern matches the key without holding it: a search echoes its pattern.)
      expect((await callTool(c, 'search', { pattern: KEY.replace('-of-', '.of.') })).content).not.toContain(KEY);
      // The worker's own files are where the worker keeps them.
      expect(readFileSync(path.join(home, 'keys'), 'utf8')).toContain(KEY);
      expect(readFileSync(path.join(certs, 'client.key'), 'utf8')).toContain(KEY);
      // Honest work around them still works: files beside them are written, moved and removed.
      const honest = await runShell(
        c,
        'echo x > vendor/new && mv vendor/README vendor/README.md && rm vendor/new && mkdir -p a/b && mv a c && ls vendor c',
      );
      expect(honest).toContain('[exit code 0]');
      expect(honest).toContain('README.md');
    });
  });
});

describe('the worker’s own snapshot of the workspace', () => {
  test('LOOPWRIGHT_HOME or a key file inside the workspace, not ignored, is not written into the repository, where a command reads every object', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'app.js'), 'module.exports = 1;\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'base');
    const home = path.join(ws, 'vendor', 'loopwright', '.loopwright');
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'keys'), `k1=${KEY}\n`);
    const certs = path.join(ws, 'certs');
    mkdirSync(certs);
    writeFileSync(path.join(certs, 'client.key'), `${KEY}\n`);
    const vars = { LOOPWRIGHT_HOME: home, TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(certs, 'client.key') };
    await withEnv(vars, async () => {
      const c = ctx(sandboxIn(dir, vars));
      expect(await runShell(c, 'echo "module.exports = 2;" > app.js && echo changed')).toContain('changed');
      // What the diff policy, the judge and the gate's checkout of the candidate take: the working state as a tree.
      const tree = await snapshotWorkingTree(ws);
      // The objects lie in the repository's .git, which every command reads: the agent's code reads them all.
      const objects = await runShell(c, 'git cat-file --batch-all-objects --batch | grep -a "key-" ; true');
      expect(objects).not.toContain(KEY);
      const listing = git(ws, 'ls-tree', '-r', '--name-only', tree);
      expect(listing).toContain('app.js');
      expect(listing).not.toContain('keys');
      expect(listing).not.toContain('client.key');
    });
  });
});

describe('the default workspace of a command check', () => {
  test('a later run under the same id (or one the folder name confuses with it) starts empty: nothing the earlier candidate left is there', async () => {
    const acts = createActivities({
      model: {} as ModelClient,
      sandbox: sandboxIn(dir),
      store: createFileBlobStore(path.join(dir, 'transcripts')),
      ledger: createFileLedger(path.join(dir, 'ledger')),
      env: { PATH: process.env.PATH },
    });
    const tag = `s10-${process.pid}-${Date.now()}`;
    // The candidate is what a model wrote (here: code the check runs); it plants a file and reads what it finds.
    const check = async (workflowId: string, runId: string, candidate: string) => {
      const input: RunCheckInput = {
        workflowId,
        attempt: 1,
        task: 't',
        candidate,
        check: {
          kind: 'command',
          name: 'command',
          timeout: '30s',
          command: 'cat found-* 2>/dev/null; cp "$LOOPWRIGHT_CANDIDATE_FILE" "found-$(date +%s%N)"; echo ok',
        },
      };
      const verdict: Verdict = await new MockActivityEnvironment({ workflowExecution: { workflowId, runId } }).run(
        acts.runCheck,
        input,
      );
      return verdict.evidence ?? '';
    };
    try {
      expect(await check(`nightly/${tag}`, 'run-a', 'left by run A')).toContain('ok');
      // The same execution's next attempt still finds it (the workspace is the run's).
      expect(await check(`nightly/${tag}`, 'run-a', 'run A again')).toContain('left by run A');
      // The id reused by a later run (--reuse), and another id that the folder's name confuses with it.
      for (const [id, runId] of [
        [`nightly/${tag}`, 'run-b'],
        [`nightly_${tag}`, 'run-c'],
      ]) {
        const seen = await check(id!, runId!, `run ${runId}`);
        expect(seen).toContain('ok');
        expect(seen).not.toContain('run A');
      }
    } finally {
      const workspaces = path.join(tmpdir(), 'loopwright', 'workspaces');
      for (const name of readdirSync(workspaces).filter((n) => n.includes(tag)))
        rmSync(path.join(workspaces, name), { recursive: true, force: true });
    }
  });
});

describe('the disk the workspace lies on', () => {
  test('a command that fills it with files, each under the file size limit, is stopped while the disk still has LOOPWRIGHT_SANDBOX_DISK_FREE; fallocate is refused', async () => {
    const st = statfsSync(ws);
    // The reserve is set 300 MiB below what is free now, so this test writes at most a few hundred MiB (other work on the machine may move it).
    const keep = Math.max(0, Math.floor((st.bavail * st.bsize) / 2 ** 20) - 300);
    const c = ctx(sandboxIn(dir, { LOOPWRIGHT_SANDBOX_DISK_FREE: `${keep}m` }));
    const run = await runShell(
      c,
      'fallocate -l 512M pre 2>&1; ls pre 2>&1; for i in $(seq 1 16); do dd if=/dev/zero of=f$i bs=1M count=256 2>/dev/null; done; echo wrote all',
    );
    expect(run).toContain('[sandbox: stopped: the disk holding the workspace has');
    expect(run).toContain('LOOPWRIGHT_SANDBOX_DISK_FREE');
    expect(run).not.toContain('wrote all');
    expect(run).toMatch(/fallocate: fallocate failed: Operation not supported/);
    const written = readdirSync(ws).reduce((n, f) => n + lstatSync(path.join(ws, f)).size, 0);
    expect(written).toBeLessThan(16 * 256 * 2 ** 20);
    // Once the disk is that full, the next command is stopped before it writes anything; with room again, commands run.
    expect(await runShell(c, 'echo started')).toContain('[sandbox: stopped');
    for (const f of readdirSync(ws)) rmSync(path.join(ws, f), { force: true });
    const again = await runShell(c, 'dd if=/dev/zero of=small bs=1M count=8 2>&1 | tail -1; echo done');
    expect(again).toContain('done');
    expect(again).not.toContain('[sandbox: stopped');
  });

  test('nor does the worker’s snapshot fill it with copies of what a command left just above the reserve', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a'), 'a\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'a');
    const freeMiB = () => {
      const st = statfsSync(ws);
      return Math.floor((st.bavail * st.bsize) / 2 ** 20);
    };
    // Room for the command's 200 MiB, not for a second copy of them in the repository's objects.
    const keep = Math.max(0, freeMiB() - 300);
    const vars = { LOOPWRIGHT_SANDBOX_DISK_FREE: `${keep}m` };
    await withEnv(vars, async () => {
      const c = ctx(sandboxIn(dir, vars));
      const run = await runShell(c, 'for i in 1 2 3 4; do head -c 52428800 /dev/urandom > r$i; done; echo wrote');
      expect(run).toContain('wrote');
      expect(run).not.toContain('[sandbox: stopped');
      await expect(snapshotWorkingTree(ws)).rejects.toThrow(
        /not snapshotted: the disk holding the workspace has \d+ MiB free/,
      );
      expect(freeMiB()).toBeGreaterThan(keep - 100);
    });
  });
});

describe('another L2 run’s work in its own repository', () => {
  // Every run's worktree shared the repository's object store and refs, which each sandbox mounted
  // read-only: run A read run B's per-attempt commits (and every object B's snapshots wrote). Each
  // run now has a repository of its own that borrows the target's objects (prepareWorkspace); the
  // hostile tests of every path are in containment-session11.test.ts.
  test('run A cannot read what run B committed on its own branch', async () => {
    const repo = path.join(dir, 'repo');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'a'), 'a\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'base');
    const worktrees = path.join(dir, 'home', 'worktrees');
    const { commitWorkspace, prepareWorkspace } = await import('../../activities/agent/workspace');
    const prepare = (workflowId: string) =>
      prepareWorkspace(worktrees, { workflowId, workspace: repo, autonomy: 'L2' });
    const a = await prepare('run-a');
    const b = await prepare('run-b');
    writeFileSync(path.join(b.root, 'config.env'), `API_TOKEN=${KEY}\n`);
    await commitWorkspace({ root: b.root, branch: b.branch!, message: 'attempt 1' });
    const c = toolContext(sandboxIn(dir), a.root, ['sh'], 20_000);
    const seen = await runShell(
      c,
      'git show loopwright/run-b:config.env; git cat-file --batch-all-objects --batch | grep -a API_TOKEN; true',
    );
    expect(seen).not.toContain(KEY);
  });
});
