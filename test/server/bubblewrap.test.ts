/**
 * server/bubblewrap.ts against fake binaries. Every test's PATH holds only temp folders, so the
 * machine's own bwrap and apt-get are never found, and never run: the only apt-get there is the
 * fake one, which records its calls and "installs" a fake bwrap.
 */
import { existsSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'fs';
import { join, relative } from 'path';
import { ConfigError } from '../../common/errors';
import type { AptHost } from '../../server/apt-install';
import { BubblewrapError, findBubblewrap, type FindBubblewrapOptions } from '../../server/bubblewrap';
import { removeDir, tempDir, writeScript } from './fake-bin';

const ROOT_LINUX: AptHost = { platform: 'linux', uid: 0 };
const USER_LINUX: AptHost = { platform: 'linux', uid: 1000 };

let root: string;
let bin: string;
let aptLog: string;
let lockFile: string;

beforeEach(() => {
  root = tempDir();
  bin = join(root, 'bin');
  aptLog = join(root, 'apt-calls');
  lockFile = join(root, 'install.lock');
});
afterEach(() => removeDir(root));

/** A fake bwrap that answers `--version` like bubblewrap 0.8.0. */
const fakeBwrap = (dir: string, version = 'bubblewrap 0.8.0'): string => writeScript(dir, 'bwrap', `echo "${version}"`);

/**
 * A fake apt-get: logs each call (arguments and DEBIAN_FRONTEND); `install` fails like apt-get
 * with empty package lists until `update` has run (or `listsReady`), then waits `delay` seconds
 * and writes a fake bwrap into `bin`. Only shell builtins and absolute paths: PATH is `bin`.
 */
function fakeAptGet(opts: { listsReady?: boolean; delay?: number; installFails?: boolean } = {}): void {
  const lists = join(root, 'apt-lists');
  if (opts.listsReady) writeFileSync(lists, '');
  writeScript(
    bin,
    'apt-get',
    [
      `echo "$* (DEBIAN_FRONTEND=$DEBIAN_FRONTEND)" >> "${aptLog}"`,
      'case "$*" in',
      `  update) : > "${lists}"; exit 0 ;;`,
      '  *"install -y bubblewrap")',
      `    [ -f "${lists}" ] || { echo "E: Unable to locate package bubblewrap" >&2; exit 100; }`,
      opts.installFails ? '    echo "E: Sub-process /usr/bin/dpkg returned an error code (1)" >&2; exit 100' : '    :',
      `    /bin/sleep ${opts.delay ?? 0}`,
      `    printf '#!/bin/sh\\necho "bubblewrap 0.8.0"\\n' > "${bin}/bwrap"; /bin/chmod +x "${bin}/bwrap"; exit 0 ;;`,
      'esac',
      'echo "fake apt-get: unexpected $*" >&2; exit 1',
    ].join('\n'),
  );
}

const aptCalls = (): string[] => (existsSync(aptLog) ? readFileSync(aptLog, 'utf8').split('\n').filter(Boolean) : []);
const installs = (): string[] => aptCalls().filter((c) => c.includes('install -y bubblewrap'));

function find(extra: FindBubblewrapOptions = {}): Promise<string> {
  return findBubblewrap({ env: { PATH: bin }, host: ROOT_LINUX, lockFile, log: () => undefined, ...extra });
}

/** The error findBubblewrap rejects with. */
async function failure(opts: FindBubblewrapOptions): Promise<Error> {
  try {
    await find(opts);
  } catch (err) {
    return err as Error;
  }
  throw new Error('findBubblewrap resolved, expected it to reject');
}

describe('findBubblewrap: LOOPWRIGHT_BWRAP', () => {
  it('returns the explicit path when it runs as bubblewrap, ahead of a bwrap on PATH', async () => {
    fakeBwrap(bin);
    const explicit = fakeBwrap(join(root, 'opt'), 'bubblewrap 0.11.0');
    await expect(find({ env: { PATH: bin, LOOPWRIGHT_BWRAP: explicit } })).resolves.toBe(explicit);
  });

  it('throws a one-line ConfigError when the explicit path is not an executable file', async () => {
    const err = await failure({ env: { PATH: bin, LOOPWRIGHT_BWRAP: join(root, 'missing') } });
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      `LOOPWRIGHT_BWRAP is set to ${join(root, 'missing')}, which does not work as bubblewrap (not an executable file): point it at a bubblewrap binary or unset it`,
    );
  });

  it('throws a one-line ConfigError when the explicit binary is not bubblewrap, and does not fall back to PATH', async () => {
    fakeBwrap(bin);
    const impostor = writeScript(join(root, 'opt'), 'bwrap', 'echo "usage: something else"; exit 1');
    const err = await failure({ env: { PATH: bin, LOOPWRIGHT_BWRAP: impostor } });
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(
      /^LOOPWRIGHT_BWRAP is set to .*, which does not work as bubblewrap \(`.*--version` exited with code 1: usage: something else\): point it at a bubblewrap binary or unset it$/,
    );
  });
});

describe('findBubblewrap: PATH', () => {
  it('returns the first bwrap on PATH that prints a bubblewrap version, skipping one that does not', async () => {
    writeScript(join(root, 'broken'), 'bwrap', 'echo "not bubblewrap"');
    const good = fakeBwrap(bin);
    await expect(find({ env: { PATH: `${join(root, 'broken')}:${bin}` } })).resolves.toBe(good);
  });

  it('skips relative PATH entries, which an agent workspace as working directory could fill', async () => {
    fakeBwrap(join(root, 'workspace'), 'bubblewrap 6.6.6');
    const good = fakeBwrap(bin);
    const relativeDir = relative(process.cwd(), join(root, 'workspace'));
    await expect(find({ env: { PATH: `${relativeDir}:${bin}` } })).resolves.toBe(good);
  });

  it('does not run apt-get when bwrap is already on PATH', async () => {
    fakeAptGet({ listsReady: true });
    const good = fakeBwrap(bin);
    await expect(find()).resolves.toBe(good);
    expect(aptCalls()).toEqual([]);
  });
});

describe('findBubblewrap: installing with apt-get as root', () => {
  it('installs bubblewrap when the package lists have it, without apt-get update, logging one line', async () => {
    fakeAptGet({ listsReady: true });
    const lines: string[] = [];
    await expect(find({ log: (line) => lines.push(line) })).resolves.toBe(join(bin, 'bwrap'));
    expect(aptCalls()).toEqual(['-o DPkg::Lock::Timeout=600 install -y bubblewrap (DEBIAN_FRONTEND=noninteractive)']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^bwrap not found .*: installing Debian's bubblewrap package \(apt-get install -y bubblewrap/,
    );
    expect(existsSync(lockFile)).toBe(false);
  });

  it('runs apt-get update and installs again when the plain install cannot find the package', async () => {
    fakeAptGet();
    await expect(find()).resolves.toBe(join(bin, 'bwrap'));
    expect(aptCalls().map((c) => c.replace(' (DEBIAN_FRONTEND=noninteractive)', ''))).toEqual([
      '-o DPkg::Lock::Timeout=600 install -y bubblewrap',
      'update',
      '-o DPkg::Lock::Timeout=600 install -y bubblewrap',
    ]);
  });

  it('says in one line what failed, how to install and how to opt out when apt-get fails', async () => {
    fakeAptGet({ listsReady: true, installFails: true });
    const err = await failure({});
    expect(err).toBeInstanceOf(BubblewrapError);
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain(
      'installing it failed: apt-get -o DPkg::Lock::Timeout=600 install -y bubblewrap exited with code 100: E: Sub-process /usr/bin/dpkg returned an error code (1)',
    );
    expect(err.message).toContain('apt-get install bubblewrap');
    expect(err.message).toContain('LOOPWRIGHT_SANDBOX=off');
  });
});

describe('findBubblewrap: when it cannot install', () => {
  it('not root: throws a one-line BubblewrapError saying how to install and how to opt out, and runs no apt-get', async () => {
    fakeAptGet({ listsReady: true });
    const err = await failure({ host: USER_LINUX });
    expect(err).toBeInstanceOf(BubblewrapError);
    expect(err.message).toBe(
      'cannot find bubblewrap for the sandbox of agent commands (no bwrap on PATH; not installing it: not root, so apt-get cannot install it): ' +
        "install it (apt-get install bubblewrap, or your distribution's bubblewrap package) or point LOOPWRIGHT_BWRAP at a bwrap binary, " +
        'or set LOOPWRIGHT_SANDBOX=off to run agent commands unsandboxed',
    );
    expect((err as BubblewrapError).tried).toEqual([
      'no bwrap on PATH',
      'not installing it: not root, so apt-get cannot install it',
    ]);
    expect(aptCalls()).toEqual([]);
  });

  it('root without apt-get on PATH: says so, with the same advice', async () => {
    const err = await failure({});
    expect(err).toBeInstanceOf(BubblewrapError);
    expect(err.message).toContain('(no bwrap on PATH; not installing it: no apt-get on PATH)');
    expect(err.message).toContain('LOOPWRIGHT_SANDBOX=off');
  });

  it('install: false: does not run apt-get even as root', async () => {
    fakeAptGet({ listsReady: true });
    const err = await failure({ install: false });
    expect(err.message).toContain('not installing it: turned off by the caller');
    expect(aptCalls()).toEqual([]);
  });

  it('not Linux: says the sandbox is Linux-only and how to opt out, without looking for apt-get', async () => {
    fakeAptGet({ listsReady: true });
    const err = await failure({ host: { platform: 'darwin', uid: 501 } });
    expect(err).toBeInstanceOf(BubblewrapError);
    expect(err.message).toBe(
      'the sandbox for agent commands needs bubblewrap, which runs only on Linux (this is darwin): run the worker on Linux, or set LOOPWRIGHT_SANDBOX=off to run agent commands unsandboxed',
    );
    expect(aptCalls()).toEqual([]);
  });
});

describe('findBubblewrap: the install lock', () => {
  it('two concurrent calls install once and both get the installed bwrap', async () => {
    fakeAptGet({ listsReady: true, delay: 1 });
    const [a, b] = await Promise.all([find(), find()]);
    expect(a).toBe(join(bin, 'bwrap'));
    expect(b).toBe(a);
    expect(installs()).toHaveLength(1);
  });

  it('waits while a live process holds the lock, then uses what it installed without running apt-get', async () => {
    fakeAptGet({ listsReady: true });
    writeFileSync(lockFile, String(process.pid));
    const found = find();
    await new Promise((r) => setTimeout(r, 1500));
    expect(aptCalls()).toEqual([]);
    fakeBwrap(bin);
    rmSync(lockFile);
    await expect(found).resolves.toBe(join(bin, 'bwrap'));
    expect(aptCalls()).toEqual([]);
  });

  it('takes over a stale lock left by a dead process and installs', async () => {
    fakeAptGet({ listsReady: true });
    writeFileSync(lockFile, '2147483646');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockFile, old, old);
    await expect(find()).resolves.toBe(join(bin, 'bwrap'));
    expect(installs()).toHaveLength(1);
    expect(existsSync(lockFile)).toBe(false);
  });
});
