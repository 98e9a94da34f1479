/**
 * What a person on this machine sees of an encrypted run: a dedicated dev server whose Web UI
 * decodes through a codec server (`--ui-codec-endpoint`), rendered by headless Chromium, shows the
 * run's input in clear, and so does `temporal workflow show --codec-endpoint`; the same run
 * without the codec (the raw history, the CLI without the endpoint, and the UI after a restart
 * without it) shows only ciphertext, and the SQLite file never holds the plaintext.
 *
 * The run's workflow type has no worker (its task queue is nobody's), so nothing runs, and it is
 * terminated at once: the input in the first event is all there is to look at.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { Client, Connection } from '@temporalio/client';
import { runUrl } from '../../client/commands/demo';
import { clientDataConverter } from '../../crypto/codec';
import { newKey, parseKeyFile } from '../../crypto/keyring';
import { dumpDom, findChromium } from '../../server/chromium';
import { startCodecServer, type CodecServer } from '../../crypto/codec-server';
import { freePort, startDevServer, type DevServer } from '../../server/dev-server';
import { findTemporalCli } from '../../server/temporal-binary';

const POLL_MS = 60_000;
const run = promisify(execFile);

let chromium = '';
let cli = '';
let dir = '';
let dev: DevServer | undefined;
let codec: CodecServer | undefined;

beforeAll(async () => {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // Fails (never skips) with what was tried when Chromium or the Temporal CLI cannot be found or installed.
  chromium = await findChromium({ log });
  cli = process.env.LOOPWRIGHT_TEMPORAL_CLI || (await findTemporalCli({ log }));
  dir = mkdtempSync(path.join(tmpdir(), 'loopwright-codec-ui-'));
}, 20 * 60_000);

afterAll(async () => {
  await dev?.stop();
  await codec?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The page's visible text: no scripts, styles or tags, entities decoded, whitespace collapsed. */
function pageText(dom: string): string {
  const body = dom.replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ');
  return body
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Loads `url` until `ready(text)` or POLL_MS have passed; returns the last page text either way. */
async function renderUntil(url: string, ready: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + POLL_MS;
  for (;;) {
    const text = pageText(await dumpDom(chromium, url, { virtualTimeMs: 8000 }));
    if (ready(text) || Date.now() > deadline) return text;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** `temporal workflow show` against the dedicated server, with none of this machine's CLI config or env. */
async function workflowShow(address: string, workflowId: string, codecEndpoint?: string): Promise<string> {
  const args = [
    'workflow',
    'show',
    '--detailed',
    '-w',
    workflowId,
    '--address',
    address,
    '--namespace',
    'default',
    ...(codecEndpoint ? ['--codec-endpoint', codecEndpoint] : []),
  ];
  const env = { PATH: process.env.PATH, HOME: dir, TEMPORAL_CONFIG_FILE: path.join(dir, 'no-temporal.yaml') };
  return (await run(cli, args, { env, timeout: 30_000 })).stdout;
}

async function startDev(dbFile: string, codecEndpoint?: string): Promise<DevServer> {
  const [port, uiPort] = [await freePort(), await freePort()];
  return startDevServer({ cli, dbFile, port, uiPort, codecEndpoint, logFile: path.join(dir, `dev-${port}.log`) });
}

describe('an encrypted run in the Temporal Web UI, rendered by headless Chromium', () => {
  test(
    'shows the decoded input through the codec server, and only ciphertext without it',
    async () => {
      const ring = parseKeyFile(`k1=${newKey()}\n`, 'test ring');
      const marker = `secret-marker-${randomBytes(6).toString('hex')}`;
      const dbFile = path.join(dir, 'dev.db');

      // The UI's port is known before the server starts: the codec server lets in that origin only.
      const uiPort = await freePort();
      codec = await startCodecServer({
        ring,
        port: 0,
        allowOrigins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
      });
      dev = await startDevServer({
        cli,
        dbFile,
        port: await freePort(),
        uiPort,
        codecEndpoint: codec.url,
        logFile: path.join(dir, 'dev-codec.log'),
      });
      expect(dev.codecEndpoint).toBe(codec.url);

      const connection = await Connection.connect({ address: dev.address });
      const workflowId = `codec-ui-${randomBytes(4).toString('hex')}`;
      try {
        const client = new Client({ connection, namespace: 'default', dataConverter: clientDataConverter(ring) });
        const handle = await client.workflow.start('codecProbeWorkflow', {
          workflowId,
          taskQueue: `nobody-polls-${randomBytes(4).toString('hex')}`,
          args: [{ task: `Fix the test; the token is ${marker}` }],
        });
        // Closed, so the UI does not long-poll its history (which would stall Chromium's virtual time).
        await handle.terminate('closed by the codec UI test');

        // The raw history, read without the codec: ciphertext with the key id.
        const raw = new Client({ connection, namespace: 'default' });
        const history = await raw.workflow.getHandle(workflowId).fetchHistory();
        const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
        expect(Buffer.from(input?.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
        expect(Buffer.from(input?.metadata?.['encryption-key-id'] ?? []).toString()).toBe('k1');
        expect(Buffer.from(temporal.api.history.v1.History.encode(history).finish()).includes(marker)).toBe(false);
      } finally {
        await connection.close();
      }

      // The Web UI asks the codec server (CORS from its own origin) and shows the input decoded.
      const page = runUrl(dev.uiUrl!, 'default', workflowId);
      const decoded = await renderUntil(page, (t) => t.includes(marker));
      expect(decoded).toContain(workflowId);
      expect(decoded).toMatch(/Input › .*"task" : "Fix the test; the token is secret-marker-/);
      expect(decoded).toContain(marker);

      // The Temporal CLI decodes through it too, and without it prints only the encrypted payload.
      expect(await workflowShow(dev.address, workflowId, codec.url)).toContain(marker);
      const cipherCli = await workflowShow(dev.address, workflowId);
      expect(cipherCli).toContain(
        `input.payloads[0].metadata.encoding: ${Buffer.from('binary/encrypted').toString('base64')}`,
      );
      expect(cipherCli).toContain('input.payloads[0].metadata.encryption-key-id: azE='); // k1
      expect(cipherCli).not.toContain(marker);

      // The same database behind a UI without the codec endpoint: the run is there, its input is not readable.
      await dev.stop();
      dev = await startDev(dbFile);
      expect(dev.codecEndpoint).toBeUndefined();
      // Without a codec the UI shows an encrypted payload's data: the sealed bytes, as base64.
      const sealed = /Input › "[A-Za-z0-9+/]{40,}={0,2}"/;
      const cipherPage = await renderUntil(
        runUrl(dev.uiUrl!, 'default', workflowId),
        (t) => t.includes(workflowId) && sealed.test(t),
      );
      expect(cipherPage).toContain(workflowId);
      expect(cipherPage).toMatch(sealed);
      expect(cipherPage).not.toContain(marker);
      await dev.stop();
      dev = undefined;

      // What is at rest: the SQLite file (and its WAL) never held the plaintext.
      for (const file of [dbFile, `${dbFile}-wal`].filter((f) => existsSync(f)))
        expect(readFileSync(file).includes(marker)).toBe(false);
      expect([dbFile, `${dbFile}-wal`].some((f) => existsSync(f) && readFileSync(f).includes(workflowId))).toBe(true);
    },
    5 * 60_000,
  );
});
