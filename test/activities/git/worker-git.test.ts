import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LOOPWRIGHT_IDENTITY, workerGitEnv } from '../../../activities/git/git-env';
import { driverOverrides, STATIC_OVERRIDES } from '../../../activities/git/overrides';
import { GitError, workerGit, workerGitBytes } from '../../../activities/git/worker-git';
import { plainGit } from './hostile-repo';

const SECRET = 'sk-lw-test-secret-do-not-leak';
const saved = { token: process.env.LW_TEST_SECRET_TOKEN, key: process.env.ANTHROPIC_API_KEY, path: process.env.PATH };
let dirs: string[] = [];

beforeEach(() => {
  process.env.LW_TEST_SECRET_TOKEN = SECRET;
  process.env.ANTHROPIC_API_KEY = SECRET;
});
afterEach(() => {
  for (const [name, value] of [
    ['LW_TEST_SECRET_TOKEN', saved.token],
    ['ANTHROPIC_API_KEY', saved.key],
    ['PATH', saved.path],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const temp = (prefix: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), `lw-git-${prefix}-`));
  dirs.push(dir);
  return dir;
};

describe('the environment git runs with', () => {
  test('is built from an allow-list: no secret of the worker, no inherited GIT_* variable, hardening settings set', () => {
    process.env.GIT_DIR = '/elsewhere';
    process.env.GIT_EXTERNAL_DIFF = '/evil';
    try {
      const env = workerGitEnv({ GIT_INDEX_FILE: '/tmp/index', ...LOOPWRIGHT_IDENTITY });
      expect(Object.values(env)).not.toContain(SECRET);
      expect(Object.keys(env).filter((k) => /TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL/i.test(k))).toEqual([]);
      expect(env.GIT_DIR).toBeUndefined();
      expect(env.GIT_EXTERNAL_DIFF).toBeUndefined();
      expect(env).toMatchObject({
        PATH: process.env.PATH,
        LC_ALL: 'C',
        HOME: '/dev/null',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_TERMINAL_PROMPT: '0',
        GIT_OPTIONAL_LOCKS: '0',
        GIT_NO_REPLACE_OBJECTS: '1',
        GIT_ATTR_NOSYSTEM: '1',
        GIT_PAGER: 'cat',
        GIT_ALLOW_PROTOCOL: '',
        GIT_INDEX_FILE: '/tmp/index',
        GIT_AUTHOR_NAME: 'Loopwright',
        GIT_COMMITTER_EMAIL: 'loopwright@localhost',
      });
    } finally {
      delete process.env.GIT_DIR;
      delete process.env.GIT_EXTERNAL_DIFF;
    }
  });

  test('a caller cannot add any other variable', () => {
    expect(() => workerGitEnv({ ANTHROPIC_API_KEY: 'x' })).toThrow(/ANTHROPIC_API_KEY may not be passed to git/);
    expect(() => workerGitEnv({ GIT_SSH_COMMAND: 'x' })).toThrow(/GIT_SSH_COMMAND may not be passed/);
  });

  test('the git process itself gets no secret, and gets every override on its command line', async () => {
    // A `git` first on PATH that records its environment and arguments, then runs the real git.
    const bin = temp('bin');
    const seen = path.join(bin, 'seen');
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\nenv >> '${seen}'\necho "ARGS $*" >> '${seen}'\nexec '${real}' "$@"\n`,
    );
    chmodSync(path.join(bin, 'git'), 0o755);
    const repo = temp('repo');
    plainGit(repo, 'init', '-q');
    process.env.PATH = `${bin}:${process.env.PATH}`;
    await workerGit(repo, ['rev-parse', '--git-dir']);
    const recorded = readFileSync(seen, 'utf8');
    expect(recorded).not.toContain(SECRET);
    expect(recorded).not.toContain('LW_TEST_SECRET_TOKEN');
    expect(recorded).toContain('GIT_CONFIG_GLOBAL=/dev/null');
    for (const [key, value] of STATIC_OVERRIDES) expect(recorded).toContain(`-c ${key}=${value}`);
  });
});

describe('workerGit', () => {
  test('resolves stdout, and rejects with "git <args> failed in <cwd>: <error line>" and the exit code', async () => {
    const repo = temp('repo');
    plainGit(repo, 'init', '-q');
    expect((await workerGit(repo, ['rev-parse', '--is-inside-work-tree'])).trim()).toBe('true');
    const err = (await workerGit(repo, ['rev-parse', '--verify', 'no-such-ref']).catch((e: unknown) => e)) as GitError;
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toBe(`git rev-parse --verify no-such-ref failed in ${repo}: fatal: Needed a single revision`);
    expect(err.exitCode).toBe(128);
  });

  test('feeds stdin and returns bytes (cat-file --batch of a binary blob)', async () => {
    const repo = temp('repo');
    plainGit(repo, 'init', '-q');
    writeFileSync(path.join(repo, 'bin'), Buffer.from([0, 1, 2, 255]));
    const oid = (await workerGit(repo, ['hash-object', '-w', 'bin'])).trim();
    const out = await workerGitBytes(repo, ['cat-file', '--batch'], { input: `${oid}\n` });
    expect(out.subarray(out.indexOf(10) + 1, out.indexOf(10) + 5)).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  test('a timeout, an abort and too much output kill git and reject', async () => {
    const repo = temp('repo');
    plainGit(repo, 'init', '-q');
    // `cat-file --batch` with stdin held open never ends: only the kill stops it.
    const fifo = path.join(repo, 'never');
    execFileSync('mkfifo', [fifo]);
    const started = Date.now();
    await expect(
      workerGit(repo, ['hash-object', '--stdin-paths'], { input: `${fifo}\n`, timeoutMs: 300 }),
    ).rejects.toThrow(/failed in .*: timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    const abort = new AbortController();
    const pending = workerGit(repo, ['hash-object', '--stdin-paths'], { input: `${fifo}\n`, signal: abort.signal });
    setTimeout(() => abort.abort(new Error('cancelled by the test')), 100);
    await expect(pending).rejects.toThrow('cancelled by the test');
    await expect(workerGit(repo, ['hash-object', '-t', 'tree', '/dev/null'], { maxBuffer: 10 })).rejects.toThrow(
      /its output passed 10 bytes/,
    );
  });
});

describe('driverOverrides', () => {
  test('neutralizes every filter, diff, merge, credential, pager, protocol, trailer and config-hook name, whatever its subsection', () => {
    const listing = [
      'filter.x.clean\nevil',
      'filter.a=b.c.smudge\nevil',
      'diff.Tex.textconv\nevil',
      'merge.m.driver\nevil %A',
      'credential.https://example.com.helper\nevil',
      'pager.log\nevil',
      'protocol.ext.allow\nalways',
      'trailer.t.cmd\nevil',
      'hook.h.command\nevil',
      'core.bare\nfalse',
      'user.name\nx',
      'include.path\n/x',
      'remote.origin.url\n/x',
      'filter.bool.required',
    ].join('\0');
    const overrides = new Map(driverOverrides(`${listing}\0`));
    expect(Object.fromEntries(overrides)).toEqual({
      'filter.x.clean': '',
      'filter.x.smudge': '',
      'filter.x.process': '',
      'filter.x.required': 'false',
      'filter.a=b.c.clean': '',
      'filter.a=b.c.smudge': '',
      'filter.a=b.c.process': '',
      'filter.a=b.c.required': 'false',
      'filter.bool.clean': '',
      'filter.bool.smudge': '',
      'filter.bool.process': '',
      'filter.bool.required': 'false',
      'diff.Tex.command': '',
      'diff.Tex.textconv': '',
      'diff.Tex.cachetextconv': 'false',
      'merge.m.driver': 'exit 1',
      'credential.https://example.com.helper': '',
      'pager.log': 'false',
      'protocol.ext.allow': 'never',
      'trailer.t.command': '',
      'trailer.t.cmd': '',
      'hook.h.enabled': 'false',
      'hook.h.event': '',
    });
  });

  test('refuses a config with implausibly many drivers', () => {
    const listing = Array.from({ length: 2000 }, (_, i) => `filter.f${i}.clean\nx`).join('\0');
    expect(() => driverOverrides(listing)).toThrow(/need 8000 overrides \(at most 4000\)/);
  });
});
