import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { lstatSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import type { ToolOutcome } from '../../../activities/tools/types';
import { must } from '../../../common/must';
import { removeDir, tempDir, toolContext } from './workspace';

/**
 * Files that are not regular files (a FIFO the agent made with `mkfifo`, a socket) must be
 * refused at once: a blocking open or read of a FIFO would freeze the worker's thread (sync
 * fs) or hold a libuv threadpool thread for good (async fs without O_NONBLOCK).
 *
 * Each FIFO gets a "release valve": a child process that opens its other end once. A tool that
 * opened the FIFO without O_NONBLOCK and waited would be released by it (and then read an empty
 * file, which fails the assertions here instead of hanging the test); a tool that refuses the
 * FIFO at once never needs it, and the valve is killed after the test.
 */
let root: string;
const registry = createToolRegistry();
const valves: ChildProcess[] = [];

beforeEach(() => {
  root = tempDir('special');
  writeFileSync(path.join(root, 'notes.txt'), 'plain text\n');
});
afterEach(() => {
  for (const valve of valves.splice(0)) if (valve.exitCode === null && valve.signalCode === null) valve.kill('SIGKILL');
  removeDir(root);
});

const call = (name: string, input: unknown): Promise<ToolOutcome> =>
  executeTool(registry, name, input, toolContext(root));

/** A FIFO at `name` in the workspace, with a valve that opens its other end once (`w` writes to it, `r` reads it). */
function fifo(name: string, valveOpens: 'w' | 'r' = 'w'): string {
  const file = path.join(root, name);
  execFileSync('mkfifo', [file]);
  const valve = spawn(
    process.execPath,
    ['-e', `const fs = require('fs'); fs.closeSync(fs.openSync(process.argv[1], '${valveOpens}'));`, file],
    { stdio: 'ignore' },
  );
  valves.push(valve);
  return file;
}

function expectRefused(outcome: ToolOutcome, name: string): void {
  expect(outcome).toEqual({
    content: `path ${name} is a named pipe (FIFO), not a regular file: only regular files can be read or written`,
    isError: true,
  });
}

describe('a FIFO in the workspace', () => {
  test('read_file refuses it without waiting for a writer', async () => {
    fifo('pipe');
    expectRefused(await call('read_file', { path: 'pipe' }), 'pipe');
  });

  test('edit_file refuses it without waiting for a writer', async () => {
    fifo('pipe');
    expectRefused(await call('edit_file', { path: 'pipe', old_text: 'a', new_text: 'b' }), 'pipe');
  });

  test('write_file refuses it without waiting for a reader', async () => {
    fifo('pipe', 'r');
    expectRefused(await call('write_file', { path: 'pipe', content: 'x' }), 'pipe');
  });

  test('search refuses it as the path to search, and skips it inside a directory', async () => {
    fifo('pipe');
    expectRefused(await call('search', { pattern: 'x', path: 'pipe' }), 'pipe');
    fifo('other-pipe');
    expect(await call('search', { pattern: 'text' })).toEqual({ content: 'notes.txt:1: plain text', isError: false });
  });

  test('list_files shows it as a named pipe without opening it', async () => {
    fifo('pipe');
    expect(await call('list_files', { path: '.' })).toEqual({
      content: 'notes.txt (11 bytes)\npipe (a named pipe (FIFO))',
      isError: false,
    });
  });

  test('many FIFO reads at once leave the file tools working (no threadpool thread is held)', async () => {
    // libuv has 4 threadpool threads by default: 8 blocked opens would starve every fs call.
    const names = Array.from({ length: 8 }, (_, i) => `pipe-${i}`);
    for (const name of names) fifo(name);
    const outcomes = await Promise.all(names.map((name) => call('read_file', { path: name })));
    outcomes.forEach((outcome, i) => expectRefused(outcome, must(names[i], 'one outcome per name')));
    expect(await call('read_file', { path: 'notes.txt' })).toEqual({ content: 'plain text\n', isError: false });
  });
});

describe('a socket in the workspace', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  test('read_file and write_file refuse it, naming what it is, and leave it a socket', async () => {
    const file = path.join(root, 'daemon.sock');
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(file, resolve));
    expect(await call('read_file', { path: 'daemon.sock' })).toEqual({
      content: 'path daemon.sock is a socket, not a regular file: only regular files can be read or written',
      isError: true,
    });
    expect(await call('write_file', { path: 'daemon.sock', content: 'x' })).toEqual({
      content: 'path daemon.sock is a socket, not a regular file: only regular files can be read or written',
      isError: true,
    });
    expect(lstatSync(file).isSocket()).toBe(true);
  });
});
