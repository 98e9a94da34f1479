import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jsonTooDeep, LIMITS } from '../prechecks';
import { RunStillRunningError, ServerUnavailableError, UsageError } from '../../common/errors';
import { deliverEvent, type EventClient } from '../events';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { portOpt as numberOpt } from '../prechecks';
import { untilSignal } from './process';
import { ReplayJournal, webhookJournalPath, type SeenEntry } from './webhook-journal';

/** How long and how much the receiver waits for and holds; tests shorten them. */
export interface WebhookLimits {
  /** Bodies larger than this are refused (413): Temporal's payload limit is 2 MB. */
  maxBodyBytes: number;
  /** A request whose headers take longer is cut off (408, Node's headersTimeout). */
  headersTimeoutMs: number;
  /** A body that takes longer to arrive after its headers is refused (408). */
  bodyTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Connections beyond this many open ones are dropped on arrival. */
  maxConnections: number;
  /** A delivery id accepted within this window is refused again (409). */
  replayWindowMs: number;
  /** At most this many delivery ids are remembered; past it the oldest are forgotten first. */
  maxDeliveryIds: number;
}

export const WEBHOOK_LIMITS: WebhookLimits = {
  maxBodyBytes: 1024 * 1024,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 64,
  replayWindowMs: 24 * 3_600_000,
  maxDeliveryIds: 100_000,
};

export interface WebhookServerOptions {
  client: EventClient;
  /** 0 picks a free port. */
  port?: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** The shared secret: every delivery must carry `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body, hex>`. */
  secret?: string;
  /** Accept unsigned deliveries; only when there is no secret (one of the two is required). */
  insecure?: boolean;
  limits?: Partial<WebhookLimits>;
  /** One line per request answered. */
  log?: (line: string) => void;
  /**
   * Where accepted delivery ids and body hashes are kept across restarts: loaded at start, each
   * accepted delivery appended (fsynced) before it is answered. Without one they are kept in memory only.
   */
  journal?: ReplayJournal;
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
 * 200 `{ workflowId, duplicate: true, state }` for a key already delivered. Before the body is
 * read: a request with an `Origin` header (a browser) 403, a Content-Type other than
 * application/json 415, a declared body over the cap 413; with a secret, a missing or malformed
 * `X-Hub-Signature-256` 401. Then the raw body must arrive within `bodyTimeoutMs` (408) and match
 * the signature (401); with a secret an `X-GitHub-Delivery` id is required (400) and one accepted
 * within the replay window is refused (409), as is a signed body accepted within the window sent
 * again for another loop or as a forced rerun (409 replayed body: the signature covers neither the
 * path nor the delivery id; for its own loop it is a duplicate of its key). Malformed JSON, a bad key, an unknown loop or input
 * failing the loop's schema: 400; --force on a running key: 409; other paths 404, other methods
 * 405; Temporal unreachable: 503. A signed GitHub `ping` answers 200 `{ ping: true }`.
 */
export function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  if (!opts.secret && !opts.insecure)
    return Promise.reject(
      new UsageError(
        'the webhook receiver needs a secret to verify signatures, or insecure: true to accept unsigned deliveries',
      ),
    );
  const host = opts.host ?? '127.0.0.1';
  const limits = { ...WEBHOOK_LIMITS, ...opts.limits };
  const receiver: Receiver = {
    client: opts.client,
    secret: opts.secret || undefined,
    limits,
    deliveries: new DeliveryIds(limits),
    bodies: new DeliveryIds(limits),
    journal: opts.journal,
  };
  for (const e of opts.journal?.loaded ?? []) {
    if (e.delivery !== undefined) receiver.deliveries.remember(e.delivery, e.at, '');
    if (e.body !== undefined) receiver.bodies.remember(e.body, e.at, e.loop ?? '');
  }
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs + 1_000,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default).
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs / 2),
    },
    (req, res) => {
      handle(receiver, req).then(
        ([status, body]) => answer(res, status, body, req, opts.log),
        (err: unknown) => answer(res, ...failure(err), req, opts.log),
      );
    },
  );
  server.maxConnections = limits.maxConnections;
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new UsageError(`port ${opts.port} on ${host} is in use: pick another with --port`)
          : err,
      ),
    );
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

interface Receiver {
  client: EventClient;
  secret: string | undefined;
  limits: WebhookLimits;
  deliveries: DeliveryIds;
  /** Signed bodies accepted within the replay window (their SHA-256), with the loop each was for. */
  bodies: DeliveryIds;
  journal: ReplayJournal | undefined;
}

async function handle(r: Receiver, req: IncomingMessage): Promise<[number, unknown]> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const loop = /^\/events\/([^/]+)$/.exec(path)?.[1];
  if (loop === undefined) throw new HttpError(404, `no such endpoint ${path}: POST events to /events/<loop>`);
  if (req.method !== 'POST') throw new HttpError(405, `${req.method} is not allowed on ${path}: use POST`);
  // Browsers put Origin on every cross-origin request and on every POST (same-origin and DNS
  // rebinding included); webhook senders (GitHub, curl, servers) do not. So any Origin means a
  // web page is posting, and no web page has business here: refuse it, even with --insecure.
  if (req.headers.origin !== undefined)
    throw new HttpError(
      403,
      `requests from a browser (Origin ${req.headers.origin.slice(0, 100)}) are refused: send deliveries from a server`,
    );
  // application/json is not a CORS "simple" type: a page can't send it without a preflight, which gets 405.
  checkContentType(req.headers['content-type']);
  if (Number(req.headers['content-length'] ?? 0) > r.limits.maxBodyBytes) throw tooLarge(r.limits);
  const signature = r.secret === undefined ? undefined : parseSignature(header(req, 'x-hub-signature-256'));
  const raw = await readBody(req, r.limits);
  if (r.secret !== undefined && !timingSafeEqual(createHmac('sha256', r.secret).update(raw).digest(), signature!)) {
    throw new HttpError(
      401,
      'X-Hub-Signature-256 does not match the body: sign the exact bytes sent with the webhook secret (LOOPWRIGHT_WEBHOOK_SECRET)',
    );
  }
  // Recorded only now that the signature holds, so nobody without the secret can use up ids.
  const delivery = deliveryId(header(req, 'x-github-delivery'), r.secret !== undefined);
  if (delivery !== undefined) r.deliveries.reserve(delivery);
  let body: { digest: string; loop: string } | undefined;
  let result: [number, unknown];
  try {
    if (req.headers['x-github-event'] === 'ping') result = [200, { ping: true }];
    else
      result = await deliver(r.client, loop, raw, (loopName, force) => {
        // The signature covers the body only (GitHub's format: not the path, not the delivery id),
        // so a captured body could be sent again under a fresh delivery id. Again for the same loop
        // it is a duplicate of its key (200), harmless; for another loop, or forcing a rerun, it
        // would start a run nobody sent: refused while the body is remembered.
        if (r.secret === undefined) return;
        const digest = createHash('sha256').update(raw).digest('hex');
        const first = r.bodies.seen(digest);
        if (first !== undefined && (first !== loopName || force))
          throw new HttpError(
            409,
            `replayed body: this exact signed body was accepted for loop ${first} within the last ${hours(r.limits)} hours; ${force ? 'a forced rerun' : `loop ${loopName}`} needs a delivery of its own (a new body)`,
          );
        if (first === undefined) {
          r.bodies.reserve(digest, loopName);
          body = { digest, loop: loopName };
        }
      });
  } catch (err) {
    // A delivery that failed may be sent again (GitHub's "Redeliver" keeps the id).
    if (delivery !== undefined) r.deliveries.release(delivery);
    if (body !== undefined) r.bodies.release(body.digest);
    throw err;
  }
  await record(r, { at: Date.now(), delivery, body: body?.digest, loop: body?.loop }, result);
  return result;
}

/**
 * Writes an accepted delivery to the journal before it is answered. The run has started by now,
 * so a failed write keeps the delivery remembered in memory and answers 500 naming the run: the
 * sender's redelivery is then refused (409) until a restart, which would forget it. (A crash
 * between the start and this write forgets it too; the write takes milliseconds.)
 */
async function record(r: Receiver, entry: SeenEntry, result: [number, unknown]): Promise<void> {
  if (r.journal === undefined || (entry.delivery === undefined && entry.body === undefined)) return;
  try {
    await r.journal.record(entry, () => [...r.deliveries.entries('delivery'), ...r.bodies.entries('body')]);
  } catch (err) {
    const run = (result[1] as { workflowId?: string }).workflowId;
    throw new HttpError(
      500,
      `${run ? `run ${run} was started, but ` : ''}the delivery could not be recorded in ${r.journal.path} (${(err as Error).message.split('\n')[0]}): the receiver's operator must fix that file`,
    );
  }
}

async function deliver(
  client: EventClient,
  segment: string,
  raw: Buffer,
  checkReplay: (loop: string, force: boolean) => void,
): Promise<[number, unknown]> {
  const loop = decodeLoop(segment);
  const body = parseJson(raw);
  if (typeof body.key !== 'string' || body.key === '')
    throw new HttpError(400, 'key: required, a string of letters, digits and ._:-/ (at most 200 characters)');
  if (body.force !== undefined && typeof body.force !== 'boolean')
    throw new HttpError(400, 'force: expected true or false');
  if (!('input' in body)) throw new HttpError(400, 'input: required (the loop input as a JSON value)');
  checkReplay(loop, body.force === true);
  const delivery = await deliverEvent(client, {
    loop,
    key: body.key,
    input: body.input,
    force: body.force as boolean | undefined,
    by: 'webhook',
  });
  return delivery.duplicate ? [200, delivery] : [201, { workflowId: delivery.workflowId, duplicate: false }];
}

/** A header's value; Node joins repeats of most headers with ", ", which then fails the format checks. */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function checkContentType(value: string | undefined): void {
  const [type, ...params] = (value ?? '').split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json')
    throw new HttpError(
      415,
      `Content-Type must be application/json (got ${value ? JSON.stringify(value.slice(0, 100)) : 'none'}): send the body as JSON`,
    );
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    throw new HttpError(415, `charset ${charset} is not supported: send UTF-8 JSON`);
}

function parseSignature(header: string | undefined): Buffer {
  if (header === undefined)
    throw new HttpError(
      401,
      'missing X-Hub-Signature-256 header: sign the raw body with HMAC-SHA256 and the webhook secret (LOOPWRIGHT_WEBHOOK_SECRET) as sha256=<hex>',
    );
  const hex = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim())?.[1];
  if (hex === undefined)
    throw new HttpError(401, 'X-Hub-Signature-256 is malformed: expected sha256= and 64 hex digits');
  return Buffer.from(hex, 'hex');
}

/** GitHub sends a GUID with every delivery; with a secret one is required, so every accepted delivery counts against replays. */
function deliveryId(header: string | undefined, required: boolean): string | undefined {
  if (header === undefined) {
    if (required)
      throw new HttpError(400, 'missing X-GitHub-Delivery header: give every delivery a unique id (GitHub sends one)');
    return undefined;
  }
  if (!/^[A-Za-z0-9._:-]{1,100}$/.test(header))
    throw new HttpError(400, 'X-GitHub-Delivery is malformed: use 1 to 100 letters, digits and ._:-');
  return header;
}

const hours = (limits: WebhookLimits) => +(limits.replayWindowMs / 3_600_000).toFixed(3);

/**
 * Delivery ids (or signed bodies) accepted within the replay window, and ones being handled
 * now, oldest first, each with a note (the loop a body was for).
 */
class DeliveryIds {
  private readonly accepted = new Map<string, { at: number; note: string }>();
  constructor(private readonly limits: WebhookLimits) {}

  /** Forgets what the window or the cap lets go of. */
  private expire(): void {
    const now = Date.now();
    for (const [old, { at }] of this.accepted) {
      if (now - at < this.limits.replayWindowMs && this.accepted.size < this.limits.maxDeliveryIds) break;
      this.accepted.delete(old);
    }
  }

  /** The note of `id` when it was accepted within the window, else undefined. */
  seen(id: string): string | undefined {
    this.expire();
    return this.accepted.get(id)?.note;
  }

  /** Throws 409 when the id was accepted within the window or is being handled right now. */
  reserve(id: string, note = ''): void {
    if (this.seen(id) !== undefined)
      throw new HttpError(
        409,
        `replayed delivery ${id}: a delivery with this id was accepted within the last ${hours(this.limits)} hours`,
      );
    this.accepted.set(id, { at: Date.now(), note });
  }

  release(id: string): void {
    this.accepted.delete(id);
  }

  /** Remembers `id` as accepted at `at` (loaded from the journal, oldest first). */
  remember(id: string, at: number, note: string): void {
    this.accepted.delete(id);
    this.accepted.set(id, { at, note });
    this.expire();
  }

  /**
   * What is remembered now, oldest first, as journal entries of the given kind (ones being handled
   * right now too: a rewrite of the journal may keep one that then fails, refused after a restart).
   */
  entries(kind: 'delivery' | 'body'): SeenEntry[] {
    this.expire();
    return [...this.accepted].map(([id, { at, note }]) =>
      kind === 'delivery' ? { at, delivery: id } : { at, body: id, loop: note },
    );
  }
}

function tooLarge(limits: WebhookLimits): HttpError {
  return new HttpError(413, `body is larger than ${limits.maxBodyBytes} bytes`);
}

/** The raw body, within the size cap and the body deadline. */
function readBody(req: IncomingMessage, limits: WebhookLimits): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(
      () => stop(new HttpError(408, `the body did not arrive within ${limits.bodyTimeoutMs / 1000} seconds`)),
      limits.bodyTimeoutMs,
    );
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBodyBytes) stop(tooLarge(limits));
      else chunks.push(chunk);
    };
    const onEnd = () => stop();
    const onError = (err: Error) => stop(new HttpError(400, `the body could not be read: ${err.message}`));
    function stop(err?: HttpError): void {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onError);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks));
    }
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

function decodeLoop(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `the loop name in the path is not valid URL encoding: ${segment}`);
  }
}

function parseJson(raw: Buffer): Record<string, unknown> {
  let body: unknown;
  const text = raw.toString('utf8');
  if (jsonTooDeep(text))
    throw new HttpError(400, `body nests arrays and objects more than ${LIMITS.jsonDepth} deep: flatten it`);
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new HttpError(
      400,
      `body is not valid JSON (${(err as Error).message.replace(/\s+/g, ' ').slice(0, 160)}): send { "key": ..., "input": ... }`,
    );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'body must be a JSON object { "key": ..., "input": ..., "force"?: true }');
  return body as Record<string, unknown>;
}

function failure(err: unknown): [number, unknown] {
  if (err instanceof HttpError) return [err.status, { error: err.message }];
  if (err instanceof ServerUnavailableError) return [503, { error: err.message }];
  if (err instanceof RunStillRunningError)
    return [409, { error: err.message, workflowId: err.workflowId, state: err.state }];
  if (err instanceof UsageError) return [400, { error: err.message }];
  return [500, { error: `internal error: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` }];
}

function answer(
  res: ServerResponse,
  status: number,
  body: unknown,
  req: IncomingMessage,
  log?: (line: string) => void,
): void {
  const text = JSON.stringify(body);
  // After a refusal the rest of the body may still be coming: close instead of reading it.
  const close = status >= 400 ? { connection: 'close' } : {};
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...close,
  });
  res.end(text);
  const what = (body as { workflowId?: string; error?: string }).workflowId ?? (body as { error?: string }).error ?? '';
  log?.(`${req.method} ${req.url} -> ${status} ${what}`);
}

/**
 * The receiver's authentication from the environment: LOOPWRIGHT_WEBHOOK_SECRET, else --insecure;
 * neither is a UsageError (exit 2), raised before anything connects.
 */
export function webhookAuth(
  env: Record<string, string | undefined>,
  opts: { insecure?: boolean },
): { secret?: string; insecure?: boolean } {
  if (env.LOOPWRIGHT_WEBHOOK_SECRET) return { secret: env.LOOPWRIGHT_WEBHOOK_SECRET };
  if (opts.insecure) return { insecure: true };
  throw new UsageError(
    'LOOPWRIGHT_WEBHOOK_SECRET is not set: set it to the secret senders sign deliveries with (X-Hub-Signature-256), or pass --insecure to accept unsigned deliveries (local testing only)',
  );
}

/** `webhooks [--port N] [--host H] [--insecure]`: serves until Ctrl-C. */
export async function webhooksCommand(
  client: LoopwrightClient,
  opts: { port?: string; host?: string; secret?: string; insecure?: boolean; journal?: ReplayJournal },
  io: Output,
): Promise<number> {
  const insecure = !opts.secret && opts.insecure === true;
  const server = await startWebhookServer({
    client,
    port: numberOpt(opts.port),
    host: opts.host,
    secret: opts.secret,
    insecure,
    log: (line) => io.err(line),
    journal: opts.journal,
  });
  if (opts.journal)
    io.out(
      `webhooks: accepted deliveries are remembered in ${opts.journal.path} (${opts.journal.loaded.length} from the last ${hours(WEBHOOK_LIMITS)} hours)`,
    );
  if (insecure)
    io.err(
      `WARNING: --insecure: deliveries are NOT authenticated: any program that can reach ${server.url} can start runs; set LOOPWRIGHT_WEBHOOK_SECRET instead`,
    );
  else if (opts.insecure)
    io.err('note: --insecure is ignored: LOOPWRIGHT_WEBHOOK_SECRET is set, so every delivery must be signed');
  io.out(
    `webhooks: listening on ${server.url} (POST ${server.url}/events/<loop> with {"key","input","force"?}${insecure ? ', unsigned' : ', signed: X-Hub-Signature-256 and X-GitHub-Delivery'}); Ctrl-C stops`,
  );
  await untilSignal();
  await server.close();
  io.out('webhooks: stopped.');
  return 0;
}

/** `webhooks [--port 8788] [--host 127.0.0.1] [--insecure]`. */
export const webhooksDefinition: CommandDefinition = (program, { action, withClient, io, env }) => {
  program
    .command('webhooks')
    .description(
      'an HTTP receiver: POST /events/<loop> {key, input, force?}, signed with X-Hub-Signature-256 (HMAC-SHA256 of the body with LOOPWRIGHT_WEBHOOK_SECRET, as GitHub signs), delivers an event; Ctrl-C stops',
    )
    .option('--port <n>', 'port', '8788')
    .option(
      '--host <host>',
      "interface to bind (every delivery's signature is verified; put TLS in front when it is not local)",
      '127.0.0.1',
    )
    .option('--insecure', 'without LOOPWRIGHT_WEBHOOK_SECRET: accept unsigned deliveries (local testing only)')
    .action(
      action(async (opts) => {
        const auth = webhookAuth(env, opts); // no secret and no --insecure is a usage error, before connecting
        // An unusable replay memory is a ConfigError (exit 2), also before connecting.
        const journal = await ReplayJournal.open(webhookJournalPath(env), {
          windowMs: WEBHOOK_LIMITS.replayWindowMs,
          maxLines: 2 * WEBHOOK_LIMITS.maxDeliveryIds,
          log: (line) => io.err(line),
        });
        try {
          return await withClient((client) => webhooksCommand(client, { ...opts, ...auth, journal }, io))();
        } finally {
          await journal.close();
        }
      }),
    );
};
