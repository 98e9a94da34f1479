/**
 * Integration: `loopwright dev` (the built CLI) prints every port it and its Temporal dev server
 * listen on, all on 127.0.0.1, and the server's HTTP API refuses to start workflows. It starts
 * with a developer's Temporal Cloud settings (TEMPORAL_API_KEY, TEMPORAL_TLS_*) in its environment,
 * which its worker and Temporal CLI calls leave aside for their own local server.
 */
import { mkdtempSync, readFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { freePort } from '../../server/dev-server';
import { readDevServerLock } from '../../server/dev-server-lock';
import { startCli, type Background } from '../helpers/cli';
import { must } from '../../common/must';
import { boundSockets, httpRequest } from './listening';
import { removeDir } from './fake-bin';

let home: string;
let dev: Background | undefined;
let printed = '';

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'lw-dev-ports-'));
  const [port, uiPort, metrics] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOOPWRIGHT_HOME: home,
    LOOPWRIGHT_SANDBOX: 'off',
    TEMPORAL_CLI: process.env.LOOPWRIGHT_TEMPORAL_CLI,
    // A developer's Temporal Cloud settings: dev talks to its own server in plain TCP regardless.
    TEMPORAL_API_KEY: 'a-temporal-cloud-key',
    TEMPORAL_TLS_SERVER_NAME: 'cloud.example',
  };
  dev = startCli(
    ['dev', '--port', String(port), '--ui-port', String(uiPort), '--metrics', `127.0.0.1:${metrics}`],
    env,
  );
  await dev.waitFor(/worker: task queue/, 120_000);
  printed = dev.output();
}, 180_000);

afterAll(async () => {
  await dev?.stop();
  removeDir(home);
});

/** The ports in dev's "listening on 127.0.0.1 only:" block, by name. */
function printedPorts(): Record<string, number[]> {
  const block = /^listening on 127\.0\.0\.1 only:\n((?: {2}.*\n)+)/m.exec(printed)?.[1] ?? '';
  return Object.fromEntries(
    block
      .trimEnd()
      .split('\n')
      .map((line) => {
        const [, name, rest] = /^ {2}(gRPC|Web UI|HTTP API|metrics|internal|codec)\s+(.*)$/.exec(line) ?? [
          undefined,
          `unknown line: ${line}`,
          '',
        ];
        // Only numbers before the first "(" (the note may contain a URL with the port again); `codec none` has none.
        return [name, [...(rest.split('(')[0] ?? '').matchAll(/\d+/g)].map((m) => Number(m[0]))];
      }),
  );
}

it('prints the gRPC, Web UI, HTTP API, metrics and internal ports, with the HTTP API refusing requests', () => {
  const ports = printedPorts();
  expect(Object.keys(ports).sort()).toEqual(['HTTP API', 'Web UI', 'codec', 'gRPC', 'internal', 'metrics']);
  // The suite's key ring (global-setup): dev serves the codec for the Web UI itself.
  expect(ports.codec).toHaveLength(1);
  expect(ports.internal).toHaveLength(3);
  expect(printed).toMatch(/HTTP API {2}\d+ \(refuses every request; --http-api turns it on\)/);
  expect(printed).toMatch(/Web UI: http:\/\/localhost:\d+/);
});

(process.platform === 'linux' ? it : it.skip)(
  'nothing listens that it did not print, nor anywhere but 127.0.0.1 (Linux only: reads /proc)',
  () => {
    const lock = readDevServerLock(join(home, 'dev.lock'));
    expect(lock?.ownerPid).toBe(dev!.child.pid);
    const server = boundSockets(lock!.pid);
    const devProcess = boundSockets(dev!.child.pid!);
    for (const s of [...server, ...devProcess]) expect(s).toMatchObject({ proto: 'tcp', address: '127.0.0.1' });
    const { codec, ...serverPorts } = printedPorts();
    expect(server.map((s) => s.port).sort()).toEqual(Object.values(serverPorts).flat().sort());
    const workerMetrics = Number(/^worker metrics: http:\/\/127\.0\.0\.1:(\d+)\/metrics$/m.exec(printed)?.[1]);
    expect(devProcess.map((s) => s.port).sort()).toEqual([workerMetrics, ...(codec ?? [])].sort());
  },
);

it('the printed HTTP API port (the one the server says it serves) refuses a text/plain POST: no workflow starts', async () => {
  const http = must(printedPorts()['HTTP API']?.[0], 'dev prints its HTTP API port');
  expect(readFileSync(join(home, 'dev-server.log'), 'utf8')).toMatch(
    new RegExp(`^Temporal HTTP:\\s+localhost:${http}$`, 'm'),
  );
  const workflowId = `csrf-from-a-page-${Date.now()}`;
  const answer = await httpRequest(
    http,
    'POST',
    `/api/v1/namespaces/default/workflows/${workflowId}`,
    { 'Content-Type': 'text/plain', Host: `127.0.0.1:${http}` },
    '{"workflowType":{"name":"x"},"taskQueue":{"name":"loopwright"}}',
  );
  expect(answer.status).toBe(403);
  const connection = await Connection.connect({ address: `127.0.0.1:${printedPorts().gRPC?.[0]}` });
  try {
    await expect(new Client({ connection }).workflow.getHandle(workflowId).describe()).rejects.toThrow(
      WorkflowNotFoundError,
    );
  } finally {
    await connection.close();
  }
});
