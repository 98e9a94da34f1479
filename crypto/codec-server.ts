import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Payload } from '@temporalio/common';
import { UsageError } from '../common/errors';
import { ClaimCheckCodec, type PayloadStore } from './claim-check';
import { EncryptionCodec } from './codec';
import type { KeyRing } from './keyring';
import { CodecBodySchema, fromJson, shapeProblems, toJson } from './codec-payloads';

/** The port `loopwright codec-server` listens on unless told otherwise (the dev server's UI is 8233). */
export const DEFAULT_CODEC_PORT = 8234;
/** The origins of the Web UI of `loopwright dev` on its default port: the browser's origin is whichever host was typed. */
export const DEFAULT_UI_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'];
/** The largest request body accepted (the server's payload limit is 2 MB; the UI sends a few at a time). */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
/** The shortest bearer token accepted. */
export const MIN_TOKEN_LENGTH = 16;

/** Options for {@link startCodecServer}. */
export interface CodecServerOptions {
  /** The key ring to encode and decode with. */
  ring?: KeyRing;
  /** The claim check's payload store (crypto/claim-check.ts), after the ring; at least one of the two. */
  store?: PayloadStore;
  /** Default {@link DEFAULT_CODEC_PORT}; 0 picks a free port. */
  port?: number;
  /** Address to bind (default 127.0.0.1). Any other than a loopback address needs `token`. */
  host?: string;
  /** Browser origins allowed to call it (CORS); default {@link DEFAULT_UI_ORIGINS}. */
  allowOrigins?: string[];
  /** Bearer token every encode and decode must carry (`Authorization: Bearer <token>`). */
  token?: string;
  /** Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
}

/** A running codec server. */
export interface CodecServer {
  /** The endpoint to give the Web UI (`--ui-codec-endpoint`) and the CLI (`--codec-endpoint`). */
  url: string;
  host: string;
  port: number;
  allowOrigins: string[];
  close(): Promise<void>;
}

/** An answer other than 200, with the one-line reason the client gets as `{ error }`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * Serves Temporal's codec server contract with Loopwright's {@link EncryptionCodec} and/or claim
 * check ({@link ClaimCheckCodec}): `POST /encode`
 * and `POST /decode` (also `/<namespace>/encode|decode`, as the CLI's `{namespace}` template makes)
 * take and answer `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }`; `X-Namespace` is
 * accepted (one ring serves every namespace). Browsers are let in from `allowOrigins` only (CORS,
 * with the OPTIONS preflight the UI's JSON POST triggers); a request from any other origin is
 * refused (403), so a web page the user visits cannot decrypt through it. Requests must be JSON
 * (415 otherwise) of at most `maxBodyBytes` (413); a body that is not the contract's shape is a 400
 * that names the field, a payload the ring cannot open a 422. Bound to 127.0.0.1 by default; on
 * any other address it refuses to start without a token, and with one it answers 401 to every
 * encode or decode lacking `Authorization: Bearer <token>` (compared in constant time).
 * Throws a UsageError when the port is taken or the token is missing or short.
 */
export async function startCodecServer(opts: CodecServerOptions): Promise<CodecServer> {
  const host = opts.host ?? '127.0.0.1';
  const allowOrigins = (opts.allowOrigins ?? DEFAULT_UI_ORIGINS).map((o) => checkOrigin(o));
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (opts.token !== undefined && opts.token.length < MIN_TOKEN_LENGTH)
    throw new UsageError(
      `the codec server token is ${opts.token.length} characters: use at least ${MIN_TOKEN_LENGTH} (e.g. \`openssl rand -hex 32\`)`,
    );
  if (!isLoopback(host) && !opts.token)
    throw new UsageError(
      `the codec server decrypts for anyone who can reach it: binding ${host} (beyond localhost) needs a bearer token: set LOOPWRIGHT_CODEC_TOKEN or --token`,
    );
  const tokenDigest = opts.token ? digest(opts.token) : undefined;
  if (!opts.ring && !opts.store) throw new UsageError('the codec server needs a key ring or a payload store to serve');
  // The order the clients' and workers' data converters apply them (crypto/codec.ts).
  const codecs = [
    ...(opts.ring ? [new EncryptionCodec(opts.ring)] : []),
    ...(opts.store ? [new ClaimCheckCodec(opts.store)] : []),
  ];
  const codec = {
    encode: async (payloads: Payload[]) => {
      for (const c of codecs) payloads = await c.encode(payloads);
      return payloads;
    },
    decode: async (payloads: Payload[]) => {
      for (const c of [...codecs].reverse()) payloads = await c.decode(payloads);
      return payloads;
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    const cors = origin !== undefined && allowOrigins.includes(origin) ? corsHeaders(origin, req) : undefined;
    try {
      const route = /^\/(?:[^/]+\/)?(encode|decode)$/.exec((req.url ?? '/').split('?')[0]!)?.[1];
      if (!route)
        throw new HttpError(
          404,
          `no such endpoint ${req.method} ${(req.url ?? '').slice(0, 100)}: POST /encode or /decode`,
        );
      // No Origin: not a browser (the Temporal CLI, curl). A browser always sends one on a POST or preflight.
      if (origin !== undefined && !cors)
        throw new HttpError(
          403,
          `origin ${origin.slice(0, 200)} is not allowed: start the codec server with --allow-origin ${origin.slice(0, 200)} to let that Web UI in`,
        );
      if (req.method === 'OPTIONS') return send(res, 204, undefined, cors);
      if (req.method !== 'POST')
        throw new HttpError(405, `${req.method} is not allowed on /${route}: use POST`, { Allow: 'POST, OPTIONS' });
      if (tokenDigest && !bearerMatches(req.headers.authorization, tokenDigest))
        throw new HttpError(401, 'missing or wrong bearer token: send Authorization: Bearer <LOOPWRIGHT_CODEC_TOKEN>', {
          'WWW-Authenticate': 'Bearer',
        });
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json')
        throw new HttpError(415, `content type ${type || '(none)'} is not accepted: send application/json`);
      const namespace = req.headers['x-namespace'];
      if (typeof namespace === 'string' && namespace.length > 1000) throw new HttpError(400, 'X-Namespace is too long');
      const parsed = CodecBodySchema.safeParse(parseJson(await readBody(req, maxBody)));
      if (!parsed.success)
        throw new HttpError(
          400,
          `the body is not {"payloads": [{"metadata": {key: base64}, "data": base64}]}: ${shapeProblems(parsed.error)}`,
        );
      const payloads = parsed.data.payloads.map(fromJson);
      let out;
      try {
        out = route === 'encode' ? await codec.encode(payloads) : await codec.decode(payloads);
      } catch (err) {
        throw new HttpError(422, `cannot ${route}: ${err instanceof Error ? err.message : String(err)}`);
      }
      send(res, 200, { payloads: out.map(toJson) }, cors);
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 'internal error in the codec server');
      if (!res.headersSent) send(res, e.status, { error: e.message }, { ...cors, ...e.headers });
      else res.destroy();
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new UsageError(
              `codec server port ${opts.port ?? DEFAULT_CODEC_PORT} on ${host} is already in use: set --port (0 picks a free one)`,
            )
          : err,
      ),
    );
    server.listen({ port: opts.port ?? DEFAULT_CODEC_PORT, host, exclusive: true }, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const urlHost =
    isLoopback(host) || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : isIP(host) === 6 ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }));
  return { url: `http://${urlHost}:${port}`, host, port, allowOrigins, close };
}

/** True for 127.0.0.0/8, ::1 and `localhost`: only this machine can connect. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

/** `scheme://host[:port]` exactly as a browser sends it in `Origin`; a UsageError otherwise. */
export function checkOrigin(origin: string): string {
  let url: URL | undefined;
  try {
    url = new URL(origin);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin.replace(/\/$/, ''))
    throw new UsageError(
      `--allow-origin ${origin} is not an origin: give scheme://host[:port], e.g. http://localhost:8233`,
    );
  return url.origin;
}

function corsHeaders(origin: string, req: IncomingMessage): Record<string, string> {
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
    'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
    'Access-Control-Max-Age': '600',
    // Chromium's Private Network Access asks before a page reaches a loopback address.
    ...(req.headers['access-control-request-private-network'] === 'true'
      ? { 'Access-Control-Allow-Private-Network': 'true' }
      : {}),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    Vary: 'Origin',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...(body === undefined
      ? {}
      : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) }),
  });
  res.end(text);
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Compares digests, so neither the token's length nor its prefix shows in the timing. */
function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  return timingSafeEqual(digest(given ?? ''), expected) && given !== undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `the body is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  const tooLarge = () => new HttpError(413, `the body is over ${max} bytes: send fewer payloads per request`);
  if (Number(req.headers['content-length'] ?? 0) > max) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}
