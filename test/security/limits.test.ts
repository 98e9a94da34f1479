import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findCgroupHome, sandboxLimitsFromEnv } from '../../activities/sandbox/limits';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';
import { ConfigError } from '../../common/errors';
import { sandboxNotice } from '../../workers/create-worker';

/**
 * A hostile agent against the machine's resources, through the real run_command in the real
 * bubblewrap sandbox: a fork bomb, a memory hog, a full /tmp or /dev/shm, one huge file. Each
 * must stop at the command's own limit, with a line that says which, while the worker's machine
 * stays usable; before these limits, each ran until the command's timeout or took the machine.
 * (run-limits.test.ts runs the same through a real worker process on the dev server.)
 */
const home = findCgroupHome();
/** The cgroup limits need a cgroup the test process may make (root on cgroup v1, or a delegated v2). */
const withCgroup = home.kind === 'cgroup' ? test : test.skip;
const noCgroup = home.kind === 'cgroup' ? '' : ` (skipped: no cgroup here: ${home.reason})`;

const LIMITS = {
  LOOPWRIGHT_SANDBOX_PIDS: '64',
  LOOPWRIGHT_SANDBOX_MEMORY: '128m',
  LOOPWRIGHT_SANDBOX_TMP: '16m',
  LOOPWRIGHT_SANDBOX_FILE_SIZE: '8m',
  // At the worker's own priority: under CI's load, a fork bomb's counting shell at a lower one
  // could wait past its timeout (the priority has a test of its own below).
  LOOPWRIGHT_SANDBOX_NICE: '0',
};
let dir: string;
let ws: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-limits-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sandboxOf = (env: Record<string, string> = LIMITS) => sandboxIn(dir, env);
const ctx = (sandbox: Sandbox) => toolContext(sandbox, ws, ['sh', 'node'], 60_000);
const sh = runShell;

/** Counts the processes of the sandbox's pid namespace with shell builtins only (no fork needed). */
const COUNT = 'n=0; for p in /proc/[0-9]*; do n=$((n + 1)); done; echo "processes: $n"';
const processes = (out: string) => Number(/processes: (\d+)/.exec(out)?.[1] ?? NaN);

/** The cgroups this process made and did not remove (every command's must be gone after it). */
function leftCgroups(): string[] {
  if (home.kind !== 'cgroup') return [];
  return [...new Set(Object.values(home.parents))].flatMap((p) =>
    readdirSync(p).filter((n) => n.startsWith(`${process.pid}-`)),
  );
}

withCgroup(
  `200 processes at once stop at the limit of 64, with a line saying so${noCgroup}`,
  async () => {
    const out = await sh(
      ctx(sandboxOf()),
      // In a subshell: a failed fork ends the shell that tried it, and this one must count after.
      `(i=0; while [ $i -lt 200 ]; do sleep 20 & i=$((i + 1)); done) 2>/dev/null; ${COUNT}; kill -9 -1`,
    );
    expect(processes(out)).toBeGreaterThan(10);
    expect(processes(out)).toBeLessThanOrEqual(64);
    expect(out).toContain(
      '[sandbox: the command reached its limit of 64 processes and threads (LOOPWRIGHT_SANDBOX_PIDS)',
    );
    expect(leftCgroups()).toEqual([]);
  },
  60_000,
);

withCgroup(
  `a fork bomb stays within the limit and ends with its command${noCgroup}`,
  async () => {
    const started = Date.now();
    const out = await sh(
      ctx(sandboxOf()),
      // The bomb forks without end (its "Cannot fork" lines to /dev/null: under load they could
      // push the count out of the capped output), started from a subshell: a failed fork ends the
      // shell that tried it, and the bomb's first descendants can fill the limit before the shell
      // that starts the pipeline has forked its second half (under CI's load it did, and the
      // script died before it counted). The script counts with builtins after a busy wait (sleep
      // would need a fork), then kills everything in the sandbox but itself. The bomb reaches the
      // limit within milliseconds; the wait is short because the script shares the CPU with 64
      // of the bomb's processes (300,000 rounds outlasted the timeout under CI's load).
      `(b() { b | b & }; b) 2>/dev/null; i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; ${COUNT}; kill -9 -1; echo survived`,
    );
    expect(out).toMatch(/processes: \d+/);
    expect(processes(out)).toBeLessThanOrEqual(64);
    expect(out).toContain('survived');
    expect(out).toContain('reached its limit of 64 processes');
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(leftCgroups()).toEqual([]);
  },
  60_000,
);

withCgroup(
  `a memory hog is killed at the limit of 128 MiB, not the worker${noCgroup}`,
  async () => {
    const out = await sh(
      ctx(sandboxOf()),
      'node -e "const a = []; for (;;) a.push(Buffer.alloc(8 << 20, 1))"; echo "node ended: $?"',
    );
    expect(out).toMatch(/node ended: 137/);
    expect(out).toContain('[sandbox: the command went over its memory limit of 128 MiB (LOOPWRIGHT_SANDBOX_MEMORY)');
    expect(leftCgroups()).toEqual([]);
  },
  60_000,
);

withCgroup(`the limits are per command: the next command starts afresh${noCgroup}`, async () => {
  const c = ctx(sandboxOf());
  await sh(c, 'node -e "const a = []; for (;;) a.push(Buffer.alloc(8 << 20, 1))"');
  const out = await sh(c, `node -e "console.log(Buffer.alloc(64 << 20, 1).length)"; ${COUNT}`);
  expect(out).toContain(String(64 << 20));
  expect(out).not.toContain('[sandbox:');
});

test('/tmp and /dev/shm are sized, and nothing else under /dev is writable', async () => {
  const out = await sh(
    ctx(sandboxOf()),
    // Files of 4 MB each (under the file-size limit) until the folder is full.
    'for d in /tmp /dev/shm; do for i in 1 2 3 4 5 6 7 8; do dd if=/dev/zero of=$d/fill$i bs=1M count=4 2>&1 | grep -o "No space left on device"; done; ' +
      'echo "$d $(cat $d/fill* | wc -c)"; rm -f $d/fill*; done; ' +
      'echo x > /dev/planted && echo "dev written"; echo x > /dev/null && echo "null works"',
  );
  expect(Number(/\/tmp (\d+)/.exec(out)?.[1])).toBeLessThanOrEqual(16 << 20);
  expect(Number(/\/dev\/shm (\d+)/.exec(out)?.[1])).toBeLessThanOrEqual(16 << 20);
  expect(out).toMatch(/No space left on device/);
  expect(out).not.toContain('dev written');
  expect(out).toContain('null works');
});

test('no file in the workspace grows past the file-size limit', async () => {
  const out = await sh(ctx(sandboxOf()), 'dd if=/dev/zero of=big bs=1M count=32 2>&1 | tail -1; echo done');
  expect(out).toMatch(/File too large|exit code|done/);
  expect(statSync(path.join(ws, 'big')).size).toBeLessThanOrEqual(8 << 20);
});

test('a command runs at a lower CPU priority than the worker, which nothing inside raises back', async () => {
  /** The nice value (field 19) of every /proc/<pid>/stat line in `out`. */
  const nices = (out: string) =>
    [...out.matchAll(/\) \S+((?: \S+){17})/g)].map((m) => Number(m[1]!.trim().split(' ')[15]));
  const worker = nices(readFileSync('/proc/self/stat', 'utf8'))[0]!;
  expect(nices(await sh(ctx(sandboxOf({})), 'cat /proc/self/stat'))).toEqual([worker + 10]);
  const out = await sh(
    ctx(sandboxOf({ ...LIMITS, LOOPWRIGHT_SANDBOX_NICE: '15' })),
    'cat /proc/self/stat; nice -n -15 cat /proc/self/stat; renice -n 0 -p $$; cat /proc/self/stat; nice -n 2 cat /proc/self/stat',
  );
  expect(nices(out)).toEqual([worker + 15, worker + 15, worker + 15, worker + 17]);
});

test('an honest command is not hurt by the defaults: threads, a few MB in /tmp and /dev/shm, a 32 MB file', async () => {
  const out = await sh(
    ctx(sandboxOf({})),
    'dd if=/dev/zero of=/tmp/t bs=1M count=32 2>/dev/null && dd if=/dev/zero of=/dev/shm/s bs=1M count=8 2>/dev/null && ' +
      'dd if=/dev/zero of=f bs=1M count=32 2>/dev/null && ' +
      "node -e \"const { Worker } = require('node:worker_threads'); let n = 0; for (let i = 0; i < 4; i++) new Worker('1', { eval: true }).on('exit', () => ++n === 4 && console.log('threads ok'))\"",
  );
  expect(out).toContain('threads ok');
  expect(out).toContain('[exit code 0]');
  expect(statSync(path.join(ws, 'f')).size).toBe(32 << 20);
});

test('LOOPWRIGHT_SANDBOX_LIMITS=require: where no cgroup can be made, commands are refused with what to do', async () => {
  const config = sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_SANDBOX_LIMITS: 'require' });
  const none = createSandbox({
    ...config,
    cgroups: () => ({ kind: 'none', reason: 'cgroup v2 has no pids controller' }),
  });
  expect(await none.status()).toMatchObject({
    kind: 'unavailable',
    reason: expect.stringContaining(
      'LOOPWRIGHT_SANDBOX_LIMITS=require, but commands cannot get process and memory limits here: cgroup v2 has no pids controller',
    ),
  });
  await expect(none.run(['true'], { workspace: ws, timeoutMs: 5_000, capChars: 100 })).rejects.toThrow(
    /does not work on this worker \(.*\): run the worker as root or in a cgroup it may manage, or unset LOOPWRIGHT_SANDBOX_LIMITS/,
  );
  const status = await none.status();
  if (status.kind === 'unavailable') expect(sandboxNotice(status).line).toContain('unset LOOPWRIGHT_SANDBOX_LIMITS');
  // Best effort (the default): the same machine runs commands, with a warning at start.
  const best = createSandbox({ ...config, requireLimits: false, cgroups: () => ({ kind: 'none', reason: 'x' }) });
  expect((await best.run(['true'], { workspace: ws, timeoutMs: 5_000, capChars: 100 })).code).toBe(0);
  if (home.kind === 'cgroup') expect((await createSandbox(config).status()).kind).toBe('bwrap');
});

describe('configuration', () => {
  test('defaults, and sizes in binary units', () => {
    expect(sandboxLimitsFromEnv({})).toEqual({
      pids: 1024,
      memoryBytes: 4 * 2 ** 30,
      tmpBytes: 2 ** 30,
      fileBytes: 2 ** 30,
      diskFreeBytes: 2 * 2 ** 30,
      nice: 10,
    });
    expect(sandboxLimitsFromEnv(LIMITS)).toEqual({
      pids: 64,
      memoryBytes: 128 << 20,
      tmpBytes: 16 << 20,
      fileBytes: 8 << 20,
      diskFreeBytes: 2 * 2 ** 30,
      nice: 0,
    });
    expect(sandboxLimitsFromEnv({ LOOPWRIGHT_SANDBOX_DISK_FREE: '0' }).diskFreeBytes).toBe(0);
    expect(sandboxLimitsFromEnv({ LOOPWRIGHT_SANDBOX_MEMORY: '2GiB' }).memoryBytes).toBe(2 * 2 ** 30);
  });

  test.each([
    ['LOOPWRIGHT_SANDBOX_PIDS', 'lots', /LOOPWRIGHT_SANDBOX_PIDS=lots is not a whole number of at least 16/],
    ['LOOPWRIGHT_SANDBOX_PIDS', '3', /at least 16/],
    [
      'LOOPWRIGHT_SANDBOX_MEMORY',
      '1m',
      /LOOPWRIGHT_SANDBOX_MEMORY=1m is not a size of at least 32 MiB \(like 512m or 4g\)/,
    ],
    ['LOOPWRIGHT_SANDBOX_TMP', '-5', /LOOPWRIGHT_SANDBOX_TMP=-5 is not a size/],
    ['LOOPWRIGHT_SANDBOX_FILE_SIZE', '1.5g', /LOOPWRIGHT_SANDBOX_FILE_SIZE=1.5g is not a size/],
    [
      'LOOPWRIGHT_SANDBOX_NICE',
      '20',
      /LOOPWRIGHT_SANDBOX_NICE=20 is not a whole number from 0 to 19: set it so, or unset it for the default, 10/,
    ],
    ['LOOPWRIGHT_SANDBOX_NICE', '-5', /LOOPWRIGHT_SANDBOX_NICE=-5 is not a whole number from 0 to 19/],
    [
      'LOOPWRIGHT_SANDBOX_LIMITS',
      'strict',
      /LOOPWRIGHT_SANDBOX_LIMITS=strict is not a limits mode: use best-effort \(the default\) or require/,
    ],
  ])('%s=%s is a one-line ConfigError naming it', (name, value, message) => {
    const read = () => sandboxConfigFromEnv({ [name]: value });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(message);
  });

  test('the worker says what binds each command, and warns when processes and memory are not limited', async () => {
    const status = await sandboxOf().status();
    expect(status.kind).toBe('bwrap');
    if (status.kind !== 'bwrap') return;
    const withLimits = sandboxNotice(status);
    expect(withLimits.line).toContain("each command's limits:");
    expect(withLimits.line).toContain('8 MiB per file');
    const without = sandboxNotice({
      ...status,
      limits: { ...status.limits, cgroup: { kind: 'none', reason: 'nope' } },
    });
    expect(without.warning).toBe(true);
    expect(without.line).toContain('WARNING: no process or memory limit for commands (nope)');
    if (home.kind === 'cgroup') {
      expect(withLimits.warning).toBe(false);
      expect(withLimits.line).toMatch(/64 processes, 128 MiB memory \(cgroup v[12]\), 16 MiB \/tmp, 8 MiB per file/);
    }
  });
});
