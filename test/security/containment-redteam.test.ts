import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCitationsCheck } from '../../activities/checks/citations';
import { writeReport } from '../../activities/reports';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { callTool, runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';

/**
 * A hostile agent against the containment, through the real tools (run_command in the real
 * bubblewrap sandbox, the file and git tools and the checks on the worker's side), for holes
 * beyond those of containment.test.ts, containment-more.test.ts and limits.test.ts. Each test
 * here failed on the code before its fix.
 */
let dir: string;
let ws: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-redteam-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sandboxOf = (env: Record<string, string> = {}) => sandboxIn(dir, env);
const ctx = (sandbox: Sandbox, root = ws) => toolContext(sandbox, root);
const sh = runShell;

describe('/proc inside the sandbox', () => {
  test('no global sysctl is writable, even for a worker running as root (core_pattern would run a program as host root)', async () => {
    const out = await sh(
      ctx(sandboxOf()),
      // access(2) asks the kernel's own permission check without writing anything; vm.swappiness
      // is written back with the value it has, which changes nothing when it is allowed.
      'for f in kernel/core_pattern kernel/modprobe kernel/poweroff_cmd vm/drop_caches; do ' +
        '[ -w /proc/sys/$f ] && echo "[writable: $f]"; done; ' +
        'v=$(cat /proc/sys/vm/swappiness); echo "$v" > /proc/sys/vm/swappiness && echo "[wrote vm.swappiness]"; ' +
        'echo "[read $(cat /proc/sys/kernel/ostype)]"',
    );
    expect(out).not.toContain('[writable:');
    expect(out).not.toContain('[wrote vm.swappiness]');
    // Reading still works: programs look at /proc/sys.
    expect(out).toContain('[read Linux]');
  });

  test('a command cannot take back its out-of-memory preference (oom_score_adj 1000)', async () => {
    const out = await sh(
      ctx(sandboxOf()),
      'echo 0 > /proc/self/oom_score_adj; sh -c "echo 0 > /proc/\\$\\$/oom_score_adj"; ' +
        'echo "[adj $(cat /proc/self/oom_score_adj)]"; echo "[ps $(ps -o pid= | wc -l)]"',
    );
    expect(out).toContain('[adj 1000]');
    // The rest of /proc still reads as before (ps, /proc/self).
    expect(out).toMatch(/\[ps [1-9]\d*\]/);
  });
});

describe('the citations check reads a cited file as read_file would', () => {
  const check = { kind: 'citations' as const, name: 'citations', testName: 'adds', timeout: '1m' };

  test('a huge file the agent made fails the citation by its size; the worker does not read it', async () => {
    // A sparse 600 MB file (no disk used): read whole, it held the worker's thread and its memory,
    // and its text was longer than a string can be, so the check threw instead of judging.
    const made = await sh(
      ctx(sandboxOf()),
      'truncate -s 600M big.log && printf "a\\nb\\nc\\n" > small.js; echo "[made]"',
    );
    expect(made).toContain('[made]');
    const verdict = await runCitationsCheck({ check, candidate: 'see big.log:1 and small.js:3', workspace: ws });
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain(
      'bad citation big.log:1: big.log is 600.0 MB, over the 2.0 MB a cited file may have',
    );
    expect(verdict.failedItems).toEqual(['big.log:1']);
  });

  test("a file of the worker's own inside the workspace cannot be cited (its line count is not told)", async () => {
    const home = path.join(ws, 'lw-home');
    mkdirSync(home);
    writeFileSync(path.join(home, 'keys.txt'), 'k1\nk2\nk3\n');
    const saved = process.env.LOOPWRIGHT_HOME;
    process.env.LOOPWRIGHT_HOME = home;
    try {
      // The agent's command cannot even see it.
      expect(await sh(ctx(sandboxOf({ LOOPWRIGHT_HOME: home })), 'cat lw-home/keys.txt; echo "[done]"')).not.toContain(
        'k1',
      );
      const verdict = await runCitationsCheck({ check, candidate: 'as lw-home/keys.txt:3 shows', workspace: ws });
      expect(verdict.passed).toBe(false);
      expect(verdict.reason).toContain("inside the worker's own files");
      expect(verdict.reason).not.toContain('has 3 lines');
    } finally {
      if (saved === undefined) delete process.env.LOOPWRIGHT_HOME;
      else process.env.LOOPWRIGHT_HOME = saved;
    }
  });
});

describe('special files the agent leaves for the worker', () => {
  test("no FIFO can be made: one named .gitignore or .gitattributes held the worker's git until its timeout", async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args], {
        cwd: ws,
        encoding: 'utf8',
      });
    git('init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a.js'), '1\n');
    git('add', '.');
    git('commit', '-q', '-m', 'a');
    const c = { ...ctx(sandboxOf()), commandTimeoutMs: 5_000 };
    const run = await sh(
      c,
      [
        'mkdir -p sub && mkfifo sub/.gitignore',
        'mknod .gitattributes p',
        `python3 -c "import os; os.mkfifo('.gitmodules')"`,
        `python3 -c "import os, stat; os.mknod('p2', stat.S_IFIFO | 0o600)"`,
        // Other nodes are still made as before: a regular file.
        `echo 2 > a.js && python3 -c "import os; os.mknod('plain.txt')" && echo made`,
      ]
        .map((cmd) => `${cmd} 2>/dev/null; echo "[rc $?]"`)
        .join('; '),
    );
    expect(run).toContain('made');
    expect(lstatSync(path.join(ws, 'plain.txt')).isFile()).toBe(true);
    // The worker's git answers at once (before: "timed out" after the tool's 5 s).
    const started = Date.now();
    const status = await callTool(c, 'git_status');
    expect(status).toMatchObject({ isError: false, content: expect.stringContaining(' M a.js') });
    expect(Date.now() - started).toBeLessThan(4_000);
    const fifos = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? fifos(path.join(d, e.name)) : lstatSync(path.join(d, e.name)).isFIFO() ? [e.name] : [],
      );
    expect(fifos(ws)).toEqual([]);
  });
});

describe("a report folder inside the workspace is the agent's to write", () => {
  test('huge or many report files planted there are not read whole on the worker thread when the index is written', async () => {
    // Sparse files cost no disk: one of 900 MB, and 200 of 4 MB (each under any per-file limit).
    const made = await sh(
      ctx(sandboxOf()),
      'mkdir -p .loopwright/reports && cd .loopwright/reports && truncate -s 900M huge.md && ' +
        'i=100; while [ $i -lt 300 ]; do truncate -s 4M p$i.md; i=$((i + 1)); done; echo "[made]"',
    );
    expect(made).toContain('[made]');
    let read = 0;
    const real = fs.readFileSync;
    const spy = jest.spyOn(fs, 'readFileSync').mockImplementation(((...args: Parameters<typeof real>) => {
      const out = real(...args);
      read += out.length;
      return out;
    }) as typeof real);
    try {
      writeReport({
        key: 'run/report/1',
        dir: path.join(ws, '.loopwright', 'reports'),
        item: 'item-1',
        title: 'Item 1',
        markdown: 'the report',
        workflowId: 'run',
        workspace: ws,
      });
    } finally {
      spy.mockRestore();
    }
    // Before: 900 MB and 800 MB were read (the first in vain: longer than a string can be).
    expect(read).toBeLessThanOrEqual(64 * 1024 * 1024 + 1024 * 1024);
    const index = fs.readFileSync(path.join(ws, '.loopwright', 'reports', 'index.md'), 'utf8');
    expect(index).toContain('[Item 1](item-1.md)');
    expect(index).toContain('[huge.md](huge.md) (not read: over the index');
    expect(index).toContain('[p299.md](p299.md) (not read: over the index');
  });
});
