import { spawnSync } from 'child_process';
import { existsSync, readFileSync, writeFileSync } from 'fs';
import { createServer, Server } from 'net';
import { join } from 'path';
import { UsageError } from '../../common/errors';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { acquireDevServerLock, isPidAlive, readDevServerLock, releaseDevServerLock } from '../../server/dev-server-lock';
import {
  DevServerRunningError,
  DevServerStartError,
  devServerArgs,
  freePort,
  PortInUseError,
  retentionFlag,
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
  it('register every search attribute, use SQLite WAL and turn off the version check and news feed', () => {
    const args = devServerArgs({ dbFile: '/d/t.db', port: 7233, uiPort: 8233, namespace: 'default' }).join(' ');
    for (const attr of SEARCH_ATTRIBUTES) expect(args).toContain(`--search-attribute ${attr.name}=${attr.type}`);
    expect(args).toContain('--db-filename /d/t.db --ip 127.0.0.1 --port 7233 --ui-port 8233 --ui-disable-news-fetch');
    expect(args).toContain('--sqlite-pragma journal_mode=WAL --sqlite-pragma synchronous=OFF');
    expect(args).toContain('--dynamic-config-value frontend.enableServerVersionCheck=false');
    expect(args).not.toContain('--namespace');
  });

  it('drop the UI when headless and create a non-default namespace', () => {
    const args = devServerArgs({ dbFile: 'x.db', port: 1, uiPort: 2, headless: true, namespace: 'loops' }).join(' ');
    expect(args).toContain('--headless');
    expect(args).not.toContain('--ui-port');
    expect(args).toContain('--namespace loops');
  });

  it('accept retention of 30 days or more and refuse less', () => {
    expect(retentionFlag('720h')).toBe('720h');
    expect(retentionFlag('30d')).toBe('720h');
    expect(() => retentionFlag('24h')).toThrow(UsageError);
    expect(() => retentionFlag('24h')).toThrow('retention 24h is under 30 days');
    expect(() => retentionFlag('forever')).toThrow('retention forever is not a duration');
  });
});

describe('dev server lock', () => {
  const lock = { pid: process.pid, address: '127.0.0.1:7233', uiUrl: 'http://localhost:8233', startedAt: '2026-01-01T00:00:00Z' };

  it('refuses a second owner while the pid is alive, naming pid and UI', () => {
    const file = join(root, 'dev.lock');
    acquireDevServerLock(file, lock);
    expect(readDevServerLock(file)).toEqual(lock);
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
    expect(readDevServerLock(file)).toEqual(lock);
    releaseDevServerLock(file, [process.pid]);
    expect(existsSync(file)).toBe(false);
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

  it('rejects with the log tail when the server exits early', async () => {
    const cli = writeScript(root, 'temporal', 'echo "FATAL: cannot open database"; exit 1');
    const lockFile = join(root, 'dev.lock');
    const started = startDevServer({ cli, dbFile: join(root, 'db', 't.db'), port: await freePort(), headless: true, lockFile });
    await expect(started).rejects.toThrow(DevServerStartError);
    await expect(started).rejects.toThrow(/exited early \(code 1\)[\s\S]*FATAL: cannot open database/);
    expect(existsSync(lockFile)).toBe(false);
    expect(readFileSync(join(root, 'db', 't.log'), 'utf8')).toContain('FATAL: cannot open database');
  });

  it('gives up after the start timeout, kills what it started and says so', async () => {
    const pidFile = join(root, 'pid');
    const cli = writeScript(root, 'temporal', `if [ "$1" = server ]; then echo $$ > ${pidFile}; echo "still booting"; exec sleep 60; fi\nexit 1`);
    const started = startDevServer({ cli, dbFile: join(root, 't.db'), port: await freePort(), headless: true, startTimeoutMs: 1000 });
    await expect(started).rejects.toThrow(/was not ready after 1 s[\s\S]*still booting/);
    expect(isPidAlive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('refuses to start while another owner holds the lock', async () => {
    const lockFile = join(root, 'dev.lock');
    acquireDevServerLock(lockFile, { pid: process.pid, address: '127.0.0.1:1', startedAt: 'now' });
    await expect(startDevServer({ cli: '/bin/false', dbFile: join(root, 't.db'), lockFile, headless: true })).rejects.toThrow(DevServerRunningError);
    expect(readDevServerLock(lockFile)?.address).toBe('127.0.0.1:1');
  });
});
