import type { IncomingMessage, ServerResponse } from 'node:http';
import { RunStillRunningError, ServerUnavailableError, UsageError } from '../../common/errors';
import { jsonTooDeep, LIMITS } from '../prechecks';

/**
 * The webhook receiver's HTTP side (webhooks.ts): its limits, reading a request (headers, the
 * body within its cap and deadline, JSON) and answering it, each refusal an {@link HttpError}
 * with its status.
 */

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

/** A refusal: its HTTP status and the message the sender gets as `{ error }`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const hours = (limits: WebhookLimits) => +(limits.replayWindowMs / 3_600_000).toFixed(3);

/** A header's value; Node joins repeats of most headers with ", ", which then fails the format checks. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

export function checkContentType(value: string | undefined): void {
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

export function parseSignature(header: string | undefined): Buffer {
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
export function deliveryId(header: string | undefined, required: boolean): string | undefined {
  if (header === undefined) {
    if (required)
      throw new HttpError(400, 'missing X-GitHub-Delivery header: give every delivery a unique id (GitHub sends one)');
    return undefined;
  }
  if (!/^[A-Za-z0-9._:-]{1,100}$/.test(header))
    throw new HttpError(400, 'X-GitHub-Delivery is malformed: use 1 to 100 letters, digits and ._:-');
  return header;
}

export function tooLarge(limits: WebhookLimits): HttpError {
  return new HttpError(413, `body is larger than ${limits.maxBodyBytes} bytes`);
}

/** The raw body, within the size cap and the body deadline. */
export function readBody(req: IncomingMessage, limits: WebhookLimits): Promise<Buffer> {
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

export function decodeLoop(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `the loop name in the path is not valid URL encoding: ${segment}`);
  }
}

export function parseJson(raw: Buffer): Record<string, unknown> {
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

export function failure(err: unknown): [number, unknown] {
  if (err instanceof HttpError) return [err.status, { error: err.message }];
  if (err instanceof ServerUnavailableError) return [503, { error: err.message }];
  if (err instanceof RunStillRunningError)
    return [409, { error: err.message, workflowId: err.workflowId, state: err.state }];
  if (err instanceof UsageError) return [400, { error: err.message }];
  return [500, { error: `internal error: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` }];
}

export function answer(
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
