import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServerUnavailableError, UsageError } from '../../common/errors';
import { deliverEvent, RunStillRunningError, type EventClient } from '../events';
import type { LoopwrightClient } from '../loopwright-client';
import type { Output } from '../output';
import { numberOpt } from './dev';
import { untilSignal } from './process';

/** Bodies larger than this are refused (413): Temporal's payload limit is 2 MB. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface WebhookServerOptions {
  client: EventClient;
  /** 0 picks a free port. */
  port?: number;
  /** Interface to bind; default 127.0.0.1 (there is no authentication: keep it local or behind a proxy). */
  host?: string;
  /** One line per request answered. */
  log?: (line: string) => void;
}

export interface WebhookServer {
  /** Base URL, e.g. http://127.0.0.1:8788; deliveries go to `${url}/events/<loop>`. */
  url: string;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * An HTTP receiver for events: `POST /events/<loop>` with `{ key, input, force? }` delivers the
 * event like `loopwright event` and answers 201 `{ workflowId, duplicate: false }` for a new run,
 * 200 `{ workflowId, duplicate: true, state }` for a key already delivered. Malformed JSON, a
 * missing or invalid key, an unknown loop or input failing the loop's schema: 400 `{ error }`;
 * --force on a running key: 409; other paths: 404; Temporal unreachable: 503.
 */
export function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const host = opts.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    handle(opts.client, req).then(
      ([status, body]) => answer(res, status, body, req, opts.log),
      (err: unknown) => answer(res, ...failure(err), req, opts.log),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new UsageError(`port ${opts.port} on ${host} is in use: pick another with --port`) : err));
    server.listen(opts.port ?? 0, host, () => {
      const { port } = server.address() as AddressInfo;
      const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
      resolve({
        url: `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

async function handle(client: EventClient, req: IncomingMessage): Promise<[number, unknown]> {
  const path = (req.url ?? '/').split('?')[0];
  const match = /^\/events\/([^/]+)$/.exec(path);
  if (!match) throw new HttpError(404, `no such endpoint ${path}: POST events to /events/<loop>`);
  if (req.method !== 'POST') throw new HttpError(405, `${req.method} is not allowed on ${path}: use POST`);
  const loop = decodeLoop(match[1]);
  const body = await readJson(req);
  if (typeof body.key !== 'string' || body.key === '') throw new HttpError(400, 'key: required, a string of letters, digits and ._:-/ (at most 200 characters)');
  if (body.force !== undefined && typeof body.force !== 'boolean') throw new HttpError(400, 'force: expected true or false');
  if (!('input' in body)) throw new HttpError(400, 'input: required (the loop input as a JSON value)');
  const delivery = await deliverEvent(client, { loop, key: body.key, input: body.input, force: body.force as boolean | undefined, by: 'webhook' });
  return delivery.duplicate ? [200, delivery] : [201, { workflowId: delivery.workflowId, duplicate: false }];
}

function decodeLoop(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `the loop name in the path is not valid URL encoding: ${segment}`);
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `body is not valid JSON (${(err as Error).message.replace(/\s+/g, ' ').slice(0, 160)}): send { "key": ..., "input": ... }`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'body must be a JSON object { "key": ..., "input": ..., "force"?: true }');
  return body as Record<string, unknown>;
}

function failure(err: unknown): [number, unknown] {
  if (err instanceof HttpError) return [err.status, { error: err.message }];
  if (err instanceof ServerUnavailableError) return [503, { error: err.message }];
  if (err instanceof RunStillRunningError) return [409, { error: err.message, workflowId: err.workflowId, state: err.state }];
  if (err instanceof UsageError) return [400, { error: err.message }];
  return [500, { error: `internal error: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` }];
}

function answer(res: ServerResponse, status: number, body: unknown, req: IncomingMessage, log?: (line: string) => void): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
  const what = (body as { workflowId?: string; error?: string }).workflowId ?? (body as { error?: string }).error ?? '';
  log?.(`${req.method} ${req.url} -> ${status} ${what}`);
}

/** `webhooks [--port N] [--host H]`: serves until Ctrl-C. */
export async function webhooksCommand(client: LoopwrightClient, opts: { port?: string; host?: string }, io: Output): Promise<number> {
  const server = await startWebhookServer({ client, port: numberOpt(opts.port), host: opts.host, log: (line) => io.err(line) });
  io.out(`webhooks: listening on ${server.url} (POST ${server.url}/events/<loop> with {"key","input","force"?}); Ctrl-C stops`);
  await untilSignal();
  await server.close();
  io.out('webhooks: stopped.');
  return 0;
}
