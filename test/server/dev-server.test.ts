import { spawnSync } from 'child_process';
import { existsSync, readFileSync, writeFileSync } from 'fs';
import { createServer, type Server } from 'net';
import { join } from 'path';
import { UsageError } from '../../common/errors';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import {
  acquireDevServerLock,
  isHolderAlive,
  isPidAlive,
  processStart,
  readDevServerLock,
  releaseDevServerLock,
} from '../../server/dev-server-lock';
import {
  DevServerRunningError,
  DevServerStartError,
  describePorts,
  devServerArgs,
  freePort,
  internalPorts,
  PortInUseError,
  retentionFlag,
  ServerPortInUseError,
  startDevServer,
} from '../../server/dev-server';
import { loopwrightHome, packageRoot } from '../../server/paths';
import { removeDir, tempDir, writeScript } from './fake-bin';

let root: string;
beforeEach(() => (root = tempDir()));
afterEach(() => removeDir(root));

/** A pid that belonged to a process that has exited. */
function deadPid(): number {
  const child = spawnSync('sh', ['-c', 'echo $$']);
  return Number(child.stdout.toString().trim());
}

describe('loopwrightHome', () => {
  it('is LOOPWRIGHT_HOME when set, else .loopwright in the package root', () => {
    expect(loopwrightHome({ LOOPWRIGHT_HOME: '/srv/lw' })).toBe('/srv/lw');
    expect(loopwrightHome({})).toBe(join(packageRoot(), '.loopwright'));
    expect(JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')).name).toBe('loopwright');
  });
});

describe('dev server arguments', () => {
  const base = { dbFile: '/d/t.db', port: 7233, uiPort: 8233, httpPort: 7243, metricsPort: 7244, namespace: 'default' };
  /** The value of every `--dynamic-config-value KEY=VALUE`, by key. */
  const dynamicConfig = (args: string[]) =>
    Object.fromEntries(
      args.flatMap((a, i) =>
        args[i - 1] === '--dynamic-config-value' ? [[a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]] : [],
      ),
    );

  it('register every search attribute, use SQLite WAL and turn off the version check and news feed', () => {
    const args = devServerArgs(base).join(' ');
    for (const attr of SEARCH_ATTRIBUTES) expect(args).toContain(`--search-attribute ${attr.name}=${attr.type}`);
    expect(args).toContain('--sqlite-pragma journal_mode=WAL --sqlite-pragma synchronous=NORMAL');
    expect(args).toContain('--dynamic-config-value frontend.enableServerVersionCheck=false');
    expect(args).toContain('--ui-disable-news-fetch');
    expect(args).not.toContain('--namespace');
  });

  it('choose every port the CLI lets us choose and bind gRPC and the Web UI to 127.0.0.1', () => {
    const args = devServerArgs(base).join(' ');
    expect(args).toContain('--db-filename /d/t.db --ip 127.0.0.1 --port 7233 --ui-ip 127.0.0.1 --ui-port 8233');
    expect(args).toContain('--http-port 7243 --metrics-port 7244');
    expect(args).toContain('--log-config');
  });

  it('make the HTTP API refuse every Host by default, and allow only 127.0.0.1 and localhost on its port with httpApi', () => {
    const off = JSON.parse(dynamicConfig(devServerArgs(base))['frontend.httpAllowedHosts'] ?? 'null') as string[];
    expect(off).toHaveLength(1);
    expect(off[0]).toMatch(/ /); // a space: no valid Host header can equal it
    expect(
      JSON.parse(dynamicConfig(devServerArgs({ ...base, httpApi: true }))['frontend.httpAllowedHosts'] ?? 'null'),
    ).toEqual(['127.0.0.1:7243', 'localhost:7243']);
  });

  it('drop the UI when headless and create a non-default namespace', () => {
    const args = devServerArgs({ ...base, headless: true, namespace: 'loops' }).join(' ');
    expect(args).toContain('--headless');
    expect(args).not.toContain('--ui-port');
    expect(args).not.toContain('--ui-ip');
    expect(args).toContain('--namespace loops');
    expect(args).toContain('--http-port 7243 --metrics-port 7244');
  });

  it('accept retention of 30 days or more and refuse less', () => {
    expect(retentionFlag('720h')).toBe('720h');
    expect(retentionFlag('30d')).toBe('720h');
    expect(() => retentionFlag('24h')).toThrow(UsageError);
    expect(() => retentionFlag('24h')).toThrow('retention 24h is under 30 days');
    expect(() => retentionFlag('forever')).toThrow('retention forever is not a duration');
  });
});

/** The `services:` part of what `temporal server start-dev --log-config` 1.9.1 prints, shortened. */
const CONFIG_PRINT = `global:
    membership:
        maxJoinDuration: 30s
        broadcastAddress: 127.0.0.1
    pprof:
        port: PPROF
        host: ""
services:
    frontend:
        rpc:
            grpcPort: 7233
            membershipPort: 0
            bindOnIP: 127.0.0.1
            httpPort: 7243
            httpAdditionalForwardedHeaders: []
    history:
        rpc:
            grpcPort: 38419
            membershipPort: 0
            bindOnIP: 127.0.0.1
            httpPort: 0
    matching:
        rpc:
            grpcPort: 45299
            membershipPort: MEMBERSHIP
            bindOnIP: 127.0.0.1
            httpPort: 0
    worker:
        rpc:
            grpcPort: 36825
            membershipPort: 0
            bindOnIP: 127.0.0.1
            httpPort: 0
archival:
    history:
        state: disabled
Temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
`;

describe('dev server ports', () => {
  it("reads the internal services' gRPC ports from the printed config, leaving out the frontend's chosen ports", () => {
    expect(internalPorts(CONFIG_PRINT.replace('PPROF', '0').replace('MEMBERSHIP', '0'))).toEqual({
      history: 38419,
      matching: 45299,
      worker: 36825,
    });
  });

  it('also lists a membership or pprof port when the config has one', () => {
    expect(internalPorts(CONFIG_PRINT.replace('PPROF', '7936').replace('MEMBERSHIP', '6935'))).toEqual({
      history: 38419,
      matching: 45299,
      'matching membership': 6935,
      worker: 36825,
      pprof: 7936,
    });
  });

  it('finds nothing in output without a config', () => {
    expect(internalPorts('Temporal CLI 1.9.1\nTemporal Server: localhost:7233\n')).toEqual({});
  });

  it('describes every port, and whether the HTTP API answers', () => {
    const ports = { grpc: 7233, ui: 8233, http: 7243, metrics: 7244, internal: { history: 1, matching: 2, worker: 3 } };
    const off = describePorts(ports, false).join('\n');
    expect(off).toMatch(/^listening on 127\.0\.0\.1 only:/);
    for (const text of [
      'gRPC      7233',
      'Web UI    8233',
      'HTTP API  7243 (refuses every request; --http-api turns it on)',
      'metrics   7244 (http://127.0.0.1:7244/metrics)',
      'history 1, matching 2, worker 3',
    ]) {
      expect(off).toContain(text);
    }
    expect(describePorts({ ...ports, ui: undefined }, true).join('\n')).toMatch(
      /HTTP API {2}7243 \(serves requests to 127\.0\.0\.1:7243 and localhost:7243; any web page you open can reach it\)/,
    );
    expect(describePorts({ ...ports, ui: undefined }, true).join('\n')).not.toContain('Web UI');
  });
});

describe('dev server lock', () => {
  const lock = {
    pid: process.pid,
    address: '127.0.0.1:7233',
    uiUrl: 'http://localhost:8233',
    startedAt: '2026-01-01T00:00:00Z',
  };

  it('refuses a second owner while the pid is alive, naming pid and UI', () => {
    const file = join(root, 'dev.lock');
    acquireDevServerLock(file, lock);
    expect(readDevServerLock(file)).toEqual({ ...lock, pidStart: processStart(process.pid) });
    expect(() => acquireDevServerLock(file, { ...lock, startedAt: 'later' })).toThrow(
      `loopwright dev is already running (pid ${process.pid}, UI http://localhost:8233): stop it with Ctrl-C in its terminal, or use that one`,
    );
  });

  it('replaces a stale lock whose pid is dead, and a garbled one', () => {
    const file = join(root, 'dev.lock');
    acquireDevServerLock(file, { ...lock, pid: deadPid() });
    acquireDevServerLock(file, lock);
    expect(readDevServerLock(file)?.pid).toBe(process.pid);
    writeFileSync(file, '{"pid": ');
    acquireDevServerLock(file, lock);
    expect(readDevServerLock(file)?.pid).toBe(process.pid);
    releaseDevServerLock(file, [process.pid]);
    expect(existsSync(file)).toBe(false);
  });

  it('replaces a lock whose pid is alive but was reused by another process since a crash (its start time differs)', () => {
    const file = join(root, 'dev.lock');
    const start = processStart(process.pid);
    expect(start).toMatch(/^\d+$/);
    writeFileSync(file, JSON.stringify({ ...lock, pidStart: String(Number(start) - 1) }));
    expect(isHolderAlive({ pid: process.pid, pidStart: String(Number(start) - 1) })).toBe(false);
    acquireDevServerLock(file, { ...lock, startedAt: 'after the crash' });
    expect(readDevServerLock(file)).toMatchObject({ pid: process.pid, startedAt: 'after the crash', pidStart: start });
    // The same pid with its real start time is the holder.
    expect(() => acquireDevServerLock(file, lock)).toThrow(/already running/);
  });

  it('leaves a lock that names another process alone on release', () => {
    const file = join(root, 'dev.lock');
    acquireDevServerLock(file, { ...lock, pid: 1 });
    releaseDevServerLock(file, [process.pid]);
    expect(readDevServerLock(file)?.pid).toBe(1);
  });
});

describe('startDevServer failures (fake temporal)', () => {
  it('says plainly that the port is taken, and releases the lock', async () => {
    const port = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    const lockFile = join(root, 'dev.lock');
    try {
      const started = startDevServer({ cli: '/bin/false', dbFile: join(root, 't.db'), port, headless: true, lockFile });
      await expect(started).rejects.toThrow(PortInUseError);
      await expect(started).rejects.toThrow(`port ${port} is already in use: another Temporal server? set --port`);
      expect(existsSync(lockFile)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it.each([
    ['httpPort', '--http-port', 'HTTP API'],
    ['metricsPort', '--metrics-port', 'server metrics'],
  ] as const)('says plainly that the %s is taken, names %s, and releases the lock', async (option, flag, what) => {
    const taken = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(taken, '127.0.0.1', r));
    const lockFile = join(root, 'dev.lock');
    try {
      const started = startDevServer({
        cli: '/bin/false',
        dbFile: join(root, 't.db'),
        port: await freePort(),
        headless: true,
        lockFile,
        [option]: taken,
      });
      await expect(started).rejects.toThrow(ServerPortInUseError);
      await expect(started).rejects.toThrow(
        `${what} port ${taken} is already in use: set ${flag}, or leave it out for a free port`,
      );
      expect(existsSync(lockFile)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('refuses an HTTP API port that is the gRPC port', async () => {
    const port = await freePort();
    await expect(
      startDevServer({ cli: '/bin/false', dbFile: join(root, 't.db'), port, httpPort: port, headless: true }),
    ).rejects.toThrow(ServerPortInUseError);
  });

  it('rejects with the log tail when the server exits early', async () => {
    const cli = writeScript(root, 'temporal', 'echo "FATAL: cannot open database"; exit 1');
    const lockFile = join(root, 'dev.lock');
    const started = startDevServer({
      cli,
      dbFile: join(root, 'db', 't.db'),
      port: await freePort(),
      headless: true,
      lockFile,
    });
    await expect(started).rejects.toThrow(DevServerStartError);
    await expect(started).rejects.toThrow(/exited early \(code 1\)[\s\S]*FATAL: cannot open database/);
    expect(existsSync(lockFile)).toBe(false);
    expect(readFileSync(join(root, 'db', 't.log'), 'utf8')).toContain('FATAL: cannot open database');
  });

  it('gives up after the start timeout, kills what it started and says so', async () => {
    const pidFile = join(root, 'pid');
    const cli = writeScript(
      root,
      'temporal',
      `if [ "$1" = server ]; then echo $$ > ${pidFile}; echo "still booting"; exec sleep 60; fi\nexit 1`,
    );
    const started = startDevServer({
      cli,
      dbFile: join(root, 't.db'),
      port: await freePort(),
      headless: true,
      startTimeoutMs: 1000,
    });
    await expect(started).rejects.toThrow(/was not ready after 1 s[\s\S]*still booting/);
    expect(isPidAlive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('refuses to start while another owner holds the lock', async () => {
    const lockFile = join(root, 'dev.lock');
    acquireDevServerLock(lockFile, { pid: process.pid, address: '127.0.0.1:1', startedAt: 'now' });
    await expect(
      startDevServer({ cli: '/bin/false', dbFile: join(root, 't.db'), lockFile, headless: true }),
    ).rejects.toThrow(DevServerRunningError);
    expect(readDevServerLock(lockFile)?.address).toBe('127.0.0.1:1');
  });
});
