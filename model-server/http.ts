import type { IncomingMessage, ServerResponse } from 'node:http';

/** Reads the whole request body as UTF-8 text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Waits `ms` before answering on `res`. Resolves true when it is time to answer, false when
 * the client went away first (the timer is then cleared, so a closing server never hangs).
 */
export function waitUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

/**
 * Sends a JSON answer (a string body is sent verbatim as text, to imitate proxies and
 * gateways that answer with HTML or plain text).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
  const contentType = typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/**
 * The problems the real API would reject a Messages request for, in `path: message` form:
 * the body must be an object with a string `model`, a number `max_tokens` and a `messages` array.
 */
export function messagesBodyProblems(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return ['body: expected a JSON object'];
  const record = body as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof record.model !== 'string' || record.model === '') problems.push('model: Field required');
  if (typeof record.max_tokens !== 'number') problems.push('max_tokens: Field required');
  if (!Array.isArray(record.messages)) problems.push('messages: Field required');
  return problems;
}

/** The base URL clients should use for a server bound to `host:port` (wildcard hosts become loopback). */
export function baseUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
