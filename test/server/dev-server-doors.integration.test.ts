/**
 * Integration: the real Temporal dev server's other doors. Every port it opens is on 127.0.0.1
 * and in what startDevServer reports; the HTTP API, which any web page could POST to, refuses
 * to start or signal workflows unless asked for; gRPC, the Web UI and metrics still work.
 */
import { randomBytes } from 'crypto';
import { join } from 'path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { type DevServer, freePort, startDevServer } from '../../server/dev-server';
import { isPidAlive } from '../../server/dev-server-lock';
import { findTemporalCli } from '../../server/temporal-binary';
import { removeDir, tempDir } from './fake-bin';
import { boundSockets, http10WithoutHost, httpRequest } from './listening';

const progress = (line: string): void => void process.stderr.write(`${line}\n`);
const onLinux = process.platform === 'linux';

let root: string;
/** Default options, with the Web UI: the HTTP API off. */
let server: DevServer | undefined;
/** `httpApi: true`, headless: the control that shows the same requests would start and signal. */
let open: DevServer | undefined;
const connections: Connection[] = [];

beforeAll(async () => {
  root = tempDir('loopwright-doors-');
  const cli = await findTemporalCli({ log: progress });
  const [port, uiPort, openPort] = [await freePort(), await freePort(), await freePort()];
  [server, open] = await Promise.all([
    startDevServer({ cli, dbFile: join(root, 'off', 'temporal.db'), port, uiPort }),
    startDevServer({ cli, dbFile: join(root, 'on', 'temporal.db'), port: openPort, headless: true, httpApi: true }),
  ]);
}, 900_000);

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
  for (const s of [server, open]) {
    await s?.stop();
    if (s && isPidAlive(s.pid)) process.kill(s.pid, 'SIGKILL');
  }
  removeDir(root);
});

function started(s: DevServer | undefined): DevServer {
  if (!s) throw new Error('the dev server did not start in beforeAll');
  return s;
}

async function clientOf(s: DevServer): Promise<Client> {
  const connection = await Connection.connect({ address: s.address });
  connections.push(connection);
  return new Client({ connection, namespace: 'default' });
}

const id = (what: string) => `doors-${what}-${randomBytes(4).toString('hex')}`;
/** What a cross-site page can send without a CORS preflight: a text/plain POST. */
const simplePost = (host: string) => ({ 'Content-Type': 'text/plain', Origin: 'http://evil.example', Host: host });
const startBody = JSON.stringify({ workflowType: { name: 'csrfWorkflow' }, taskQueue: { name: 'nobody-polls-this' } });
const signalBody = JSON.stringify({ input: { payloads: [] } });

async function exists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

async function signalsIn(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) =>
    e.workflowExecutionSignaledEventAttributes ? [e.workflowExecutionSignaledEventAttributes.signalName ?? ''] : [],
  );
}

describe('ports', () => {
  it('reports every port, all different, with the history, matching and worker services read from its config', () => {
    const { ports } = started(server);
    expect(Object.keys(ports.internal).sort()).toEqual(['history', 'matching', 'worker']);
    const all = [ports.grpc, ports.ui, ports.http, ports.metrics, ...Object.values(ports.internal)];
    expect(all.every((p) => Number.isInteger(p) && p! > 0)).toBe(true);
    expect(new Set(all).size).toBe(all.length);
    expect(started(server).metricsUrl).toBe(`http://127.0.0.1:${ports.metrics}/metrics`);
  });

  (onLinux ? it : it.skip)(
    'listens on 127.0.0.1 only, on exactly the ports it reports, and binds no UDP socket (Linux only: reads /proc)',
    () => {
      for (const s of [started(server), started(open)]) {
        const { grpc, ui, http, metrics, internal } = s.ports;
        const sockets = boundSockets(s.pid);
        expect(sockets.filter((x) => x.proto.startsWith('udp'))).toEqual([]);
        expect(sockets.filter((x) => x.address !== '127.0.0.1')).toEqual([]);
        const reported = [grpc, ui, http, metrics, ...Object.values(internal)].filter(
          (p): p is number => p !== undefined,
        );
        expect(sockets.map((x) => x.port).sort()).toEqual(reported.sort());
      }
    },
  );
});

describe('HTTP API, off by default', () => {
  it('refuses a cross-site text/plain POST that would start a workflow: 403, and nothing starts', async () => {
    const s = started(server);
    const client = await clientOf(s);
    for (const host of [`127.0.0.1:${s.ports.http}`, `localhost:${s.ports.http}`, `rebind.example:${s.ports.http}`]) {
      const workflowId = id('start');
      const answer = await httpRequest(
        s.ports.http,
        'POST',
        `/api/v1/namespaces/default/workflows/${workflowId}`,
        simplePost(host),
        startBody,
      );
      expect({ host, status: answer.status, body: answer.body }).toEqual({
        host,
        status: 403,
        body: '{"code": 7, "message": "Host not allowed"}',
      });
      expect(await exists(client, workflowId)).toBe(false);
    }
  });

  it('refuses a request without a Host header too (HTTP/1.0), which would match an empty allow-list', async () => {
    const s = started(server);
    const workflowId = id('nohost');
    expect(
      await http10WithoutHost(s.ports.http, `/api/v1/namespaces/default/workflows/${workflowId}`, startBody),
    ).toMatch(/^HTTP\/1\.[01] 403 /);
    expect(await exists(await clientOf(s), workflowId)).toBe(false);
  });

  it('refuses a POST that would signal a running workflow, while gRPC starts and signals it', async () => {
    const s = started(server);
    const client = await clientOf(s);
    const workflowId = id('signal');
    await client.workflow.start('csrfWorkflow', { taskQueue: 'nobody-polls-this', workflowId });
    const answer = await httpRequest(
      s.ports.http,
      'POST',
      `/api/v1/namespaces/default/workflows/${workflowId}/signal/decision`,
      simplePost(`127.0.0.1:${s.ports.http}`),
      signalBody,
    );
    expect(answer.status).toBe(403);
    await client.workflow.getHandle(workflowId).signal('viaGrpc');
    expect(await signalsIn(client, workflowId)).toEqual(['viaGrpc']);
    await client.workflow.getHandle(workflowId).terminate('test done');
  });
});

describe('HTTP API with httpApi: true (the control)', () => {
  it('starts and signals a workflow from the same text/plain POSTs: the refusals above are the setting, not a broken request', async () => {
    const s = started(open);
    const client = await clientOf(s);
    const workflowId = id('open');
    const host = `127.0.0.1:${s.ports.http}`;
    const start = await httpRequest(
      s.ports.http,
      'POST',
      `/api/v1/namespaces/default/workflows/${workflowId}`,
      simplePost(host),
      startBody,
    );
    expect(start.status).toBe(200);
    expect(await exists(client, workflowId)).toBe(true);
    const signal = await httpRequest(
      s.ports.http,
      'POST',
      `/api/v1/namespaces/default/workflows/${workflowId}/signal/decision`,
      simplePost(host),
      signalBody,
    );
    expect(signal.status).toBe(200);
    expect(await signalsIn(client, workflowId)).toEqual(['decision']);
    await client.workflow.getHandle(workflowId).terminate('test done');
  });

  it('still refuses a Host other than 127.0.0.1 or localhost on its port (a DNS-rebinding page)', async () => {
    const s = started(open);
    const workflowId = id('rebind');
    const answer = await httpRequest(
      s.ports.http,
      'POST',
      `/api/v1/namespaces/default/workflows/${workflowId}`,
      simplePost(`rebind.example:${s.ports.http}`),
      startBody,
    );
    expect(answer.status).toBe(403);
    expect(await exists(await clientOf(s), workflowId)).toBe(false);
  });
});

describe('Web UI and metrics', () => {
  it('the Web UI serves its page and lists runs started over gRPC', async () => {
    const s = started(server);
    const client = await clientOf(s);
    const workflowId = id('ui');
    await client.workflow.start('csrfWorkflow', { taskQueue: 'nobody-polls-this', workflowId });
    const page = await fetch(s.uiUrl!);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    // The UI server reaches the frontend over its own gRPC connection: on a busy machine it may answer 503 for a moment.
    let api = await fetch(`${s.uiUrl}/api/v1/namespaces/default/workflows/${workflowId}`);
    for (let i = 0; i < 40 && api.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 250));
      api = await fetch(`${s.uiUrl}/api/v1/namespaces/default/workflows/${workflowId}`);
    }
    expect(api.status).toBe(200);
    expect(JSON.stringify(await api.json())).toContain(workflowId);
    await client.workflow.getHandle(workflowId).terminate('test done');
  });

  it('the Web UI refuses a cross-site POST without its CSRF token, and gives a foreign origin no CORS grant', async () => {
    const s = started(server);
    const uiPort = s.ports.ui!;
    const workflowId = id('uicsrf');
    const answer = await httpRequest(
      uiPort,
      'POST',
      `/api/v1/namespaces/default/workflows/${workflowId}`,
      simplePost(`localhost:${uiPort}`),
      startBody,
    );
    expect(answer.status).toBe(400);
    expect(answer.body).toMatch(/missing csrf token/);
    expect(await exists(await clientOf(s), workflowId)).toBe(false);
    const preflight = await httpRequest(uiPort, 'OPTIONS', `/api/v1/namespaces/default/workflows/${workflowId}`, {
      Host: `localhost:${uiPort}`,
      Origin: 'http://evil.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,x-csrf-token',
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('metrics answer on the reported port', async () => {
    const answer = await fetch(started(server).metricsUrl);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toMatch(/^# (HELP|TYPE) /m);
  });
});
