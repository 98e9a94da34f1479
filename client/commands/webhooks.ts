import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError } from '../../common/errors';
import { deliverEvent, type EventClient } from '../events';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { portOpt as numberOpt } from '../prechecks';
import { untilSignal } from './process';
import {
  answer,
  checkContentType,
  decodeLoop,
  deliveryId,
  failure,
  header,
  hours,
  HttpError,
  parseJson,
  parseSignature,
  readBody,
  tooLarge,
  WEBHOOK_LIMITS,
  type WebhookLimits,
} from './webhook-http';
import { DeliveryIds, ReplayJournal, webhookJournalPath, type SeenEntry } from './webhook-journal';

export { WEBHOOK_LIMITS, type WebhookLimits };

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
