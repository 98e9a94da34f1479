import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { goCacheMaster, isGoWorkspace, pruneScratch, sandboxGo, underLock } from '../../../activities/sandbox/go-cache';

// The warm Go build cache's pieces that need no go: which workspaces get a copy, which go the
// sandbox runs, and the lock that lets one process build a master while others wait for it.
// The cache itself, attacked through the real sandbox and go: test/security/go-cache.test.ts.

let dir: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-go-cache-unit-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function fakeGo(folder: string): string {
  mkdirSync(folder, { recursive: true });
  const go = path.join(folder, 'go');
  writeFileSync(go, '#!/bin/sh\nexit 1\n');
  chmodSync(go, 0o755);
  return go;
}

test('a Go module is a workspace with go.mod or go.work at its root or one folder down, not deeper, not in node_modules or a dot folder', () => {
  const ws = (name: string, files: string[]) => {
    const root = path.join(dir, name);
    for (const f of files) {
      mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
      writeFileSync(path.join(root, f), 'module x\n');
    }
    mkdirSync(root, { recursive: true });
    return root;
  };
  expect(isGoWorkspace(ws('root', ['go.mod']))).toBe(true);
  expect(isGoWorkspace(ws('work', ['go.work']))).toBe(true);
  expect(isGoWorkspace(ws('sub', ['backend/go.mod', 'web/package.json']))).toBe(true);
  expect(isGoWorkspace(ws('deep', ['a/b/go.mod']))).toBe(false);
  expect(isGoWorkspace(ws('vendored', ['node_modules/go.mod', '.cache/go.mod']))).toBe(false);
  expect(isGoWorkspace(ws('none', ['package.json']))).toBe(false);
  expect(isGoWorkspace(path.join(dir, 'missing'))).toBe(false);
});

test("the sandbox's go is the first on PATH that a command sees: masked, unmounted and relative entries are passed over", () => {
  const masked = path.join(dir, 'home');
  const hidden = fakeGo(path.join(masked, 'go', 'bin'));
  const unmounted = fakeGo(path.join(dir, 'opt', 'bin'));
  const shown = fakeGo(path.join(dir, 'toolchain', 'bin'));
  const config = (PATH: string) => ({ env: { PATH }, readOnly: [dir], masked: [masked] });
  expect(sandboxGo(config(['bin', path.dirname(hidden), path.dirname(shown)].join(':')))).toBe(shown);
  expect(sandboxGo({ ...config(path.dirname(unmounted)), readOnly: [path.join(dir, 'toolchain')] })).toBeUndefined();
  // A PATH entry that is a symlink into a folder the sandbox does not show leads nowhere inside.
  symlinkSync(path.dirname(unmounted), path.join(dir, 'toolchain', 'link'));
  expect(
    sandboxGo({ ...config(path.join(dir, 'toolchain', 'link')), readOnly: [path.join(dir, 'toolchain')] }),
  ).toBeUndefined();
});

test('no copy where the loop moved GOCACHE, where warm caches are off, where the workspace is no Go module, or where go is not there', async () => {
  const ws = path.join(dir, 'ws');
  mkdirSync(ws);
  writeFileSync(path.join(ws, 'go.mod'), 'module x\n');
  const config = { env: { PATH: process.env.PATH }, readOnly: [], masked: [], goCache: { root: path.join(dir, 'c') } };
  expect(await goCacheMaster(config, ws, { GOCACHE: '/tmp/mine' })).toBeUndefined();
  expect(await goCacheMaster(config, ws, { XDG_CACHE_HOME: '/tmp/mine' })).toBeUndefined();
  expect(await goCacheMaster({ ...config, goCache: false }, ws)).toBeUndefined();
  const plain = path.join(dir, 'plain');
  mkdirSync(plain);
  writeFileSync(path.join(plain, 'package.json'), '{}');
  expect(await goCacheMaster(config, plain)).toBeUndefined();
  expect(await goCacheMaster({ ...config, env: { PATH: path.join(dir, 'nothing') } }, ws)).toBeUndefined();
});

test('the lock: of two builders one builds, the other waits and takes its master; a lock whose holder died is taken over', async () => {
  const done = path.join(dir, 'master');
  const lock = `${done}.lock`;
  let builds = 0;
  let inside = 0;
  const work = async () => {
    inside++;
    expect(inside).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    mkdirSync(done);
    builds++;
    inside--;
  };
  expect(await Promise.all([underLock(lock, done, work), underLock(lock, done, work)])).toEqual([done, done]);
  expect(builds).toBe(1);

  // A builder that died holding the lock (its pid is gone): the next one builds.
  const dead = spawn('true');
  await new Promise((r) => dead.on('exit', r));
  const other = path.join(dir, 'other');
  mkdirSync(`${other}.lock`);
  writeFileSync(path.join(`${other}.lock`, 'pid'), String(dead.pid));
  const built = await underLock(`${other}.lock`, other, async () => {
    mkdirSync(other);
  });
  expect(built).toBe(other);
}, 30_000);

test('what a builder that died left (a scratch folder older than any build may take) is removed by the next builder; masters, locks and live builds stay', () => {
  const old = new Date(Date.now() - 60 * 60_000);
  for (const name of ['.build-dead', '.build-live', '.build-mine', 'abc123', 'abc123.lock'])
    mkdirSync(path.join(dir, name));
  for (const name of ['.build-dead', '.build-mine', 'abc123', 'abc123.lock'])
    utimesSync(path.join(dir, name), old, old);
  pruneScratch(dir, path.join(dir, '.build-mine'));
  expect(
    ['.build-dead', '.build-live', '.build-mine', 'abc123', 'abc123.lock'].map((n) => existsSync(path.join(dir, n))),
  ).toEqual([false, true, true, true, true]);
});
