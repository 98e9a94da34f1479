import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { snapshotWorkingTree } from '../../activities/git/snapshot';
import { createModelCaller } from '../../activities/model';
import type { ModelCall } from '../../activities/model-port';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { callTool, runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';

/**
 * A hostile agent against the containment, through the real tools (run_command in the real
 * bubblewrap sandbox, the file and git tools and the worker's own git on its side), for holes
 * beyond those of containment.test.ts, containment-more.test.ts, containment-redteam.test.ts and
 * limits.test.ts. Each test here failed on the code before its fix.
 */
let dir: string;
let ws: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-session9-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sandboxOf = (env: Record<string, string> = {}) => sandboxIn(dir, env);
const ctx = (sandbox: Sandbox, root = ws) => toolContext(sandbox, root, ['sh'], 5_000);
const sh = runShell;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });

/** Resolves `p`, or 'hung' when it has not settled after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)))]).finally(
    () => clearTimeout(timer),
  );
}

/** A nested repository, made by a sandboxed command at `at`, whose HEAD's ref is a symlink to `target`. */
const plantedRepo = (at: string, target: string) =>
  `mkdir -p ${at}/.git/objects ${at}/.git/refs/heads && printf "ref: refs/heads/x\\n" > ${at}/.git/HEAD && ` +
  `ln -s ${target} ${at}/.git/refs/heads/x && echo planted`;

describe('nested repositories the agent plants for the worker’s git', () => {
  test('a ref symlinked to /dev/ptmx held the per-attempt snapshot for ten minutes (to /dev/zero: all the machine’s memory); a .git file read another repository’s HEAD', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a.txt'), '1\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'a');
    // Another repository on the machine, outside the workspace.
    const other = path.join(dir, 'other');
    mkdirSync(other);
    git(other, 'init', '-q', '-b', 'main');
    git(other, 'commit', '-q', '--allow-empty', '-m', 'secret history');
    const otherHead = git(other, 'rev-parse', 'HEAD').trim();

    const c = ctx(sandboxOf());
    const out = await sh(
      c,
      // /dev/ptmx, opened by the worker's git, is a new terminal that nobody writes: a read that never ends.
      `${plantedRepo('pty', '/dev/ptmx')} && ` +
        `mkdir -p leak && printf "gitdir: ${other}/.git\\n" > leak/.git && echo x > leak/f && ` +
        // An honest nested repository (a test fixture left behind) is still recorded as a gitlink.
        'git init -q honest && git -C honest -c user.name=a -c user.email=a@a commit -q --allow-empty -m h && echo honest && ' +
        'echo 2 > a.txt',
    );
    expect(out).toContain('planted');
    expect(out).toContain('honest');

    const tree = await within(snapshotWorkingTree(ws), 20_000);
    expect(tree).not.toBe('hung');
    const listing = git(ws, 'ls-tree', tree as string);
    // The planted repositories are left out; the change and the honest nested repository are in.
    expect(listing).not.toMatch(/\tpty$/m);
    expect(listing).not.toContain(otherHead);
    expect(listing).not.toMatch(/\tleak$/m);
    expect(listing).toMatch(/^160000 commit [0-9a-f]{40}\thonest$/m);
    expect(listing).toMatch(/^100644 blob [0-9a-f]{40}\ta\.txt$/m);
  });

  test('a submodule whose checkout the agent replaces with such a repository: git_status and git_diff refuse it at once instead of hanging', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a.txt'), '1\n');
    git(ws, 'add', '.');
    // A submodule (a gitlink) at `mod`, not checked out: its folder is empty.
    git(ws, 'update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},mod`);
    git(ws, 'commit', '-q', '-m', 'a');
    mkdirSync(path.join(ws, 'mod'));

    const c = ctx(sandboxOf());
    // Before: git_status answers.
    expect(await callTool(c, 'git_status')).toMatchObject({ isError: false });
    expect(await sh(c, `${plantedRepo('mod', '/dev/ptmx')} && echo 2 > a.txt`)).toContain('planted');
    for (const tool of ['git_status', 'git_diff']) {
      const started = Date.now();
      const result = await callTool(c, tool);
      // Before the fix: "timed out" after the tool's 5 s, every call.
      expect(result).toMatchObject({
        isError: true,
        content: expect.stringContaining('mod/.git/refs/heads/x is a symlink'),
      });
      expect(Date.now() - started).toBeLessThan(4_000);
    }
    // Once the agent removes it, the tools answer again.
    await sh(c, 'rm -rf mod/.git');
    expect(await callTool(c, 'git_status')).toMatchObject({
      isError: false,
      content: expect.stringContaining(' M a.txt'),
    });
  });
  test('an untracked one whose commondir is a symlink held git_status, git_diff and the snapshot’s listing of untracked files', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a.txt'), '1\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'a');
    const c = ctx(sandboxOf());
    // Telling whether an untracked folder is a repository reads its commondir, following the symlink.
    const out = await sh(
      c,
      'mkdir -p deep/cd/.git/objects deep/cd/.git/refs && printf "ref: refs/heads/x\\n" > deep/cd/.git/HEAD && ' +
        'ln -s /dev/ptmx deep/cd/.git/commondir && echo 2 > a.txt && echo new > b.txt && echo planted',
    );
    expect(out).toContain('planted');
    for (const tool of ['git_status', 'git_diff']) {
      const started = Date.now();
      // Before the fix: "timed out" after the tool's 5 s.
      expect(await callTool(c, tool)).toMatchObject({
        isError: true,
        content: expect.stringContaining('deep/cd/.git/commondir'),
      });
      expect(Date.now() - started).toBeLessThan(4_000);
    }
    const tree = await within(snapshotWorkingTree(ws), 20_000);
    expect(tree).not.toBe('hung');
    const listing = git(ws, 'ls-tree', '-r', tree as string);
    expect(listing).toMatch(/\ta\.txt$/m);
    expect(listing).toMatch(/\tb\.txt$/m);
    expect(listing).not.toContain('deep');
  });
});

describe('tool output that breaks the run’s history', () => {
  test('a search result cut between the halves of an emoji reaches the model as valid Unicode', async () => {
    const c = ctx(sandboxOf());
    // One line of emoji, written by a command: search shows a match line's first 300 UTF-16 code
    // units, and the 300th is the first half of an emoji.
    const out = await sh(c, 'python3 -c "print(\\"a\\" + chr(0x1F600) * 400)" > emoji.txt && echo written');
    expect(out).toContain('written');
    const found = await callTool(c, 'search', { pattern: '^a' });
    expect(found).toMatchObject({ isError: false, content: expect.stringContaining('emoji.txt:1: a') });

    // The next model call carries it, as the agent turn sends a tool result. The stand-in endpoint
    // refuses what the Messages API refuses: a request body with a lone surrogate (a 400 that
    // no retry fixes, on every later call of the run, since the result stays in its history).
    const sent: string[] = [];
    const callModel = createModelCaller({
      client: {
        provider: 'stand-in',
        call: async (call: ModelCall) => {
          const body = JSON.stringify(call);
          sent.push(body);
          if (/\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i.test(body))
            throw new Error('400 The request body is not valid JSON: no low surrogate in string');
          return {
            content: [{ type: 'text', text: 'ok' }],
            stopReason: 'end_turn',
            tokens: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
          };
        },
      },
    });
    const reply = await callModel({
      role: 'worker',
      model: 'm',
      workflowId: 'w',
      attempt: 1,
      system: 'sys',
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'search', input: { pattern: '^a' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: found.content }] },
      ],
      maxTokens: 10,
      price: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    });
    expect(reply.text).toBe('ok');
    expect(sent[0]).toContain('emoji.txt:1: a');
  });
});

describe('symlinks swapped in between the file tools’ check and their open', () => {
  test('a command swapping a folder for a symlink out of the workspace gets no write_file, read_file, list_files or search through it', async () => {
    const SECRET = 'secret-73c1-outside-the-workspace';
    mkdirSync(path.join(ws, 'd'));
    writeFileSync(path.join(ws, 'd', 's.txt'), 'inside\n');
    const out = path.join(dir, 'out');
    mkdirSync(out);
    writeFileSync(path.join(out, 's.txt'), `${SECRET}\n`);
    // Another run working in the same folder (L1 runs of one repository), or anything else that
    // writes there while the worker's file tools run: here a command of a loop that allows sh.
    const c = toolContext(sandboxOf(), ws, ['sh'], 15_000);
    const racer = sh(
      c,
      `end=$(($(date +%s)+6)); while [ $(date +%s) -lt $end ]; do mv d d.real; ln -s ${out} d; rm d; mv d.real d; done; echo raced`,
    );
    const seen: string[] = [];
    const until = Date.now() + 5_000;
    for (let i = 0; Date.now() < until; i++) {
      const calls = [
        callTool(c, 'write_file', { path: `d/new${i % 50}/x.txt`, content: 'pwned\n' }),
        callTool(c, 'write_file', { path: 'd/x.txt', content: 'pwned\n' }),
        callTool(c, 'read_file', { path: 'd/s.txt' }),
        callTool(c, 'list_files', { path: 'd' }),
        callTool(c, 'search', { pattern: 'secret-73c1', path: 'd' }),
      ];
      for (const r of await Promise.all(calls)) if (r.content.includes(SECRET)) seen.push(r.content);
      if (seen.length > 0 || existsSync(path.join(out, 'x.txt'))) break;
    }
    expect(await racer).toContain('raced');
    // Before the fix: a write landed in the folder outside, or the secret came back.
    expect({ outside: readdirSync(out), seen }).toEqual({ outside: ['s.txt'], seen: [] });
    expect(readFileSync(path.join(out, 's.txt'), 'utf8')).toBe(`${SECRET}\n`);
    // Honest use: the same calls without the racer, through a symlink inside the workspace too.
    // (the racer may have left d in pieces: write_file made d while it was gone)
    expect(await sh(c, 'mkdir h && echo inside > h/s.txt && ln -s h link && echo ok')).toContain('ok');
    expect(await callTool(c, 'write_file', { path: 'link/deep/er/y.txt', content: 'y\n' })).toMatchObject({
      isError: false,
    });
    expect(await callTool(c, 'read_file', { path: 'h/deep/er/y.txt' })).toMatchObject({ content: 'y\n' });
    expect(await callTool(c, 'read_file', { path: 'link/s.txt' })).toMatchObject({ content: 'inside\n' });
    expect(await callTool(c, 'list_files', { path: 'link' })).toMatchObject({
      content: expect.stringContaining('s.txt'),
    });
    expect(await callTool(c, 'search', { pattern: 'inside' })).toMatchObject({
      content: expect.stringContaining('h/s.txt:1: inside'),
    });
    expect(
      await callTool(c, 'edit_file', { path: 'link/s.txt', old_text: 'inside', new_text: 'edited' }),
    ).toMatchObject({
      isError: false,
    });
  });
});

describe('the worker’s own git on files the agent made', () => {
  test('git_diff of a large text file the agent wrote is held to the git memory limit (before: about 19 times the file)', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'f.txt'), 'start\n');
    writeFileSync(path.join(ws, 'small.txt'), 'a\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'a');
    const c = ctx(sandboxOf());
    // 40 MB of short lines: git diff held about 750 MB for it (5 GB for 270 MB), outside the
    // sandbox and its cgroup, once per git_diff call, and a turn's read calls run side by side.
    const out = await sh(
      c,
      'python3 -c "import sys; sys.stdout.write(\\"\\".join(\\"line %d\\\\n\\" % i for i in range(4000000)))" > f.txt && echo written',
    );
    expect(out).toContain('written');
    const before = process.env.LOOPWRIGHT_GIT_MEMORY;
    process.env.LOOPWRIGHT_GIT_MEMORY = '256m';
    try {
      const diffs = await Promise.all([callTool(c, 'git_diff'), callTool(c, 'git_diff')]);
      for (const d of diffs)
        expect(d).toMatchObject({ isError: true, content: expect.stringMatching(/out of memory/i) });
      // An honest change is diffed as before, under the same limit.
      await sh(c, 'echo start > f.txt && echo b > small.txt');
      expect(await callTool(c, 'git_diff')).toMatchObject({ isError: false, content: expect.stringContaining('+b') });
      expect(await callTool(c, 'git_status')).toMatchObject({
        isError: false,
        content: expect.stringContaining(' M small.txt'),
      });
    } finally {
      if (before === undefined) delete process.env.LOOPWRIGHT_GIT_MEMORY;
      else process.env.LOOPWRIGHT_GIT_MEMORY = before;
    }
  });
});
