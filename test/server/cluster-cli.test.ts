import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UsageError } from '../../common/errors';
import { parseClusterArgs } from '../../scripts/cluster';
import { freePort } from '../../server/free-port';

/**
 * `npm run cluster` refuses bad input and a missing Go or PostgreSQL with one `error:` line and
 * exit 2, before anything starts (the built script as a process, in a fresh LOOPWRIGHT_HOME).
 */
const SCRIPT = path.join(__dirname, '..', '..', 'dist', 'scripts', 'cluster.js');

function cluster(args: string[], env: Record<string, string> = {}) {
  const home = mkdtempSync(path.join(tmpdir(), 'lw-cluster-cli-'));
  const result = spawnSync(process.execPath, [SCRIPT, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOOPWRIGHT_HOME: home, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, lines: result.stderr.trim().split('\n').filter(Boolean), home };
}

describe('parseClusterArgs', () => {
  test('reads start with its numbers, stop and status with --dir', () => {
    expect(parseClusterArgs(['start', '--port', '7300', '--workers', '3'])).toEqual({
      command: 'start',
      flags: { '--port': '7300', '--workers': '3' },
    });
    expect(parseClusterArgs(['stop', '--dir', '/tmp/x'])).toEqual({ command: 'stop', flags: { '--dir': '/tmp/x' } });
  });

  test.each([
    [[], /unknown command \(none\)/],
    [['launch'], /unknown command launch/],
    [['start', '--nodes', '3'], /unknown option --nodes for start/],
    [['stop', '--port', '7233'], /unknown option --port for stop/],
    [['status', '--ui-port', '8080'], /unknown option --ui-port for status/],
    [['start', '--ui-port', 'web'], /--ui-port must be a whole number, not web/],
    [['start', '--port'], /--port needs a value/],
    [['start', '--workers', 'two'], /--workers must be a whole number, not two/],
    [['start', '--port', '-1'], /--port must be a whole number, not -1/],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseClusterArgs(argv as string[])).toThrow(UsageError);
    expect(() => parseClusterArgs(argv as string[])).toThrow(message);
  });
});

describe('npm run cluster as a process', () => {
  let busy: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (busy ? busy.close(() => resolve()) : resolve())));

  test('an unknown flag: one error line, exit 2', () => {
    const r = cluster(['start', '--replicas', '2']);
    expect({ code: r.code, lines: r.lines }).toEqual({
      code: 2,
      lines: [expect.stringMatching(/^error: unknown option --replicas for start/)],
    });
  });

  test('a port out of range and a port in use: one error line each, exit 2', async () => {
    expect(cluster(['start', '--port', '70000'])).toMatchObject({
      code: 2,
      lines: [expect.stringMatching(/^error: --port must be a whole number from 1 to 65535, not 70000$/)],
    });
    busy = createServer();
    const port = await new Promise<number>((resolve) =>
      busy!.listen(0, '127.0.0.1', () => resolve((busy!.address() as { port: number }).port)),
    );
    expect(cluster(['start', '--port', String(port)])).toMatchObject({
      code: 2,
      lines: [`error: port ${port} is in use: give another with --port`],
    });
  });

  test('PostgreSQL missing: one error line naming it, exit 2', () => {
    const r = cluster(['start', '--port', '1'], { LOOPWRIGHT_PG_BIN: mkdtempSync(path.join(tmpdir(), 'lw-no-pg-')) });
    // Port 1 is never free for an unprivileged bind but is for root: either error is a refusal before anything starts.
    expect(r.code).toBe(2);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(
      /^error: (LOOPWRIGHT_PG_BIN is set to .* which has no postgres binary|port 1 is in use)/,
    );
  });

  test('Go missing and no Temporal server built: one error line naming Go, exit 2', async () => {
    const withoutGo = (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter((dir) => !existsSync(path.join(dir, 'go')))
      .join(path.delimiter);
    const r = cluster(['start', '--port', String(await freePort())], { PATH: withoutGo });
    expect(r.code).toBe(2);
    expect(r.lines).toEqual([
      expect.stringMatching(
        /^error: the Temporal server 1\.\d+\.\d+ is not installed and Go is not on PATH to build it/,
      ),
    ]);
  });

  test('status and stop without a cluster say so and exit 0', () => {
    expect(cluster(['status'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no cluster running from /) });
    expect(cluster(['stop'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no cluster running from /) });
  });
});
