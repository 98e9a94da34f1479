/**
 * Integration: finds (or really installs, into loopwrightHome()) the Temporal CLI and test
 * server, starts a real headless dev server on free ports and checks what it promises.
 */
import { existsSync } from 'fs';
import { join } from 'path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import {
  type DevServer,
  DevServerRunningError,
  freePort,
  PortInUseError,
  startDevServer,
} from '../../server/dev-server';
import { isPidAlive, readDevServerLock } from '../../server/dev-server-lock';
import { runCommand } from '../../server/run-command';
import { findTemporalCli, findTestServer } from '../../server/temporal-binary';
import { ensureSearchAttributes } from '../../server/temporal-operator';
import { removeDir, tempDir } from './fake-bin';

const progress = (line: string): void => void process.stderr.write(`${line}\n`);

let root: string;
let cli: string;
let lockFile: string;
let server: DevServer | undefined;

beforeAll(async () => {
  root = tempDir('loopwright-dev-server-');
  lockFile = join(root, 'dev.lock');
  cli = await findTemporalCli({ log: progress });
  const port = await freePort();
  server = await startDevServer({ cli, dbFile: join(root, 'db', 'temporal.db'), port, headless: true, lockFile });
}, 900_000);

afterAll(async () => {
  const pid = server?.pid;
  await server?.stop();
  if (pid !== undefined && isPidAlive(pid)) process.kill(pid, 'SIGKILL');
  removeDir(root);
});

function running(): DevServer {
  if (!server) throw new Error('the dev server did not start in beforeAll');
  return server;
}

it('finds a Temporal CLI that reports its version', async () => {
  expect((await runCommand(cli, ['--version'])).stdout).toMatch(/temporal version \d+\.\d+\.\d+/);
});

it('finds (or installs) a test server that runs', async () => {
  const testServer = await findTestServer({ log: progress });
  expect((await runCommand(testServer, [])).stderr + (await runCommand(testServer, [])).stdout).toMatch(/usage/i);
}, 900_000);

it('answers on its address with 30-day retention and every search attribute registered', async () => {
  const connection = await Connection.connect({ address: running().address });
  try {
    const ns = await connection.workflowService.describeNamespace({ namespace: 'default' });
    expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds ?? 0)).toBeGreaterThanOrEqual(30 * 86_400);
    const attrs = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(attrs.customAttributes ?? {}).sort()).toEqual(
      expect.arrayContaining(SEARCH_ATTRIBUTES.map((a) => a.name)),
    );
  } finally {
    await connection.close();
  }
});

it('writes the lock with the server pid and address', () => {
  expect(readDevServerLock(lockFile)).toMatchObject({ pid: running().pid, address: running().address });
  expect(running().address).toMatch(/^127\.0\.0\.1:\d+$/);
});

it('refuses a second start on the same lock file', async () => {
  const second = startDevServer({
    cli,
    dbFile: join(root, 'other.db'),
    port: await freePort(),
    headless: true,
    lockFile,
  });
  await expect(second).rejects.toThrow(DevServerRunningError);
  await expect(second).rejects.toThrow(
    `loopwright dev is already running (pid ${running().pid}, address ${running().address})`,
  );
});

it('refuses a second server on the same port', async () => {
  const port = Number(running().address.split(':')[1]);
  const second = startDevServer({ cli, dbFile: join(root, 'other.db'), port, headless: true });
  await expect(second).rejects.toThrow(PortInUseError);
});

it('registers search attributes an existing database lacks', async () => {
  const target = { cli, address: running().address, namespace: 'default' };
  const removed = await runCommand(cli, [
    'operator',
    'search-attribute',
    'remove',
    '--name',
    'LoopTokens',
    '--yes',
    '--address',
    target.address,
  ]);
  expect(removed.code).toBe(0);
  expect(await ensureSearchAttributes(target)).toEqual(['LoopTokens']);
  expect(await ensureSearchAttributes(target)).toEqual([]);
});

it('stop() ends the process and releases the lock', async () => {
  const { pid } = running();
  await running().stop();
  expect(isPidAlive(pid)).toBe(false);
  expect(existsSync(lockFile)).toBe(false);
  await running().stop(); // a second stop is harmless
});
