import { createHmac, randomUUID } from 'node:crypto';
import { connect } from 'node:net';

/** The secret the webhook tests configure and sign with. */
export const SECRET = 'test-webhook-secret-0123456789';

/** `sha256=<hex>` of the raw bytes, as GitHub computes X-Hub-Signature-256. */
export function sign(raw: string | Buffer, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
}

export interface Delivery {
  method?: string;
  /** Sent as is when a string, else JSON.stringify'd. */
  body?: unknown;
  /** Headers beyond GitHub's; a null value leaves that header out. */
  headers?: Record<string, string | null>;
  /** Sign with this secret (default SECRET); false sends no signature. */
  secret?: string | false;
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * A POST the way GitHub delivers one: Content-Type application/json, X-GitHub-Event,
 * a fresh X-GitHub-Delivery GUID and X-Hub-Signature-256 over the exact bytes sent.
 */
export async function deliver(url: string, d: Delivery = {}): Promise<Answer> {
  const method = d.method ?? 'POST';
  const raw = d.body === undefined ? undefined : typeof d.body === 'string' ? d.body : JSON.stringify(d.body);
  const headers: Record<string, string | null> = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/test',
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    ...(d.secret === false ? {} : { 'x-hub-signature-256': sign(raw ?? '', d.secret) }),
    ...d.headers,
  };
  const sent = Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== null));
  const res = await fetch(url, { method, headers: sent, body: raw });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** What a raw TCP exchange got back: the bytes received and how long until the server closed. */
export interface RawExchange {
  text: string;
  closedAfterMs: number;
}

/**
 * Writes `chunks` to a fresh connection (waiting `gapMs` between them), then reads until the
 * server closes the connection or `waitMs` passes (then `closedAfterMs` is Infinity).
 */
export function rawExchange(
  url: string,
  chunks: string[],
  opts: { gapMs?: number; waitMs?: number } = {},
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname);
    let text = '';
    let done = false;
    const finish = (closedAfterMs: number) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedAfterMs });
    };
    const timer = setTimeout(() => finish(Infinity), opts.waitMs ?? 10_000);
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => finish(Date.now() - started));
    socket.on('error', () => finish(Date.now() - started));
    socket.on('connect', () => {
      void (async () => {
        for (const [i, chunk] of chunks.entries()) {
          if (i > 0) await new Promise((r) => setTimeout(r, opts.gapMs ?? 0));
          if (done) return;
          socket.write(chunk);
        }
      })();
    });
  });
}

/** The status code of the first response in a raw exchange, or undefined when there was none. */
export function statusOf(text: string): number | undefined {
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  return m ? Number(m[1]) : undefined;
}
