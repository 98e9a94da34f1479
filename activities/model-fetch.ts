import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** Chunks read ahead of the SDK before the response is paused. */
const READ_AHEAD = 16;

/**
 * A `fetch` for the Anthropic client built on node:http and node:https, so that no timeout of
 * the HTTP stack cuts a model call: Node's built-in fetch (undici) gives up after 300 s without
 * headers or without a body chunk, whatever the call's own limits say. Here the only limits are
 * the caller's (its AbortSignal: the model call's total deadline, idle timeout, cancellation).
 *
 * Bytes that arrived before the connection broke reach the reader before the error does, so
 * usage sent just before a drop is still read. A broken connection is a `TypeError` with the
 * cause, as fetch reports it; an aborted request is an `AbortError`.
 */
export function createModelFetch(): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  return async (input, init) => {
    const { signal: given, ...rest } = init ?? {};
    const signal = given ?? undefined;
    // The Request only parses the call; given the signal it would add a listener of its own
    // that stays until the Request is garbage collected.
    const request = new Request(input, rest);
    if (signal?.aborted) throw abortError();
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const url = new URL(request.url);
    const secure = url.protocol === 'https:';
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const req = (secure ? https : http).request(url, {
        method: request.method,
        headers,
        agent: secure ? agents.https : agents.http,
      });
      const onAbort = () => req.destroy(abortError());
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(isAbort(err) ? err : new TypeError('fetch failed', { cause: err }));
      });
      req.on('response', (res) => {
        const responseHeaders = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
          const [name, value] = res.rawHeaders.slice(i, i + 2);
          if (name !== undefined && value !== undefined) responseHeaders.append(name, value);
        }
        const status = res.statusCode ?? 500;
        const stream = NULL_BODY.has(status) || request.method === 'HEAD' ? null : bodyStream(res, signal);
        if (!stream) res.resume();
        res.once('close', () => signal?.removeEventListener('abort', onAbort));
        resolve(new Response(stream, { status, statusText: res.statusMessage, headers: responseHeaders }));
      });
      req.end(body);
    });
  };
}

/**
 * The response body as a web stream that hands over every chunk that arrived before it reports
 * the connection's end or failure (a web stream's own error would drop the chunks queued in it).
 */
function bodyStream(res: IncomingMessage, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  const chunks: Buffer[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  signal?.addEventListener('abort', poke, { once: true });
  res.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    if (chunks.length >= READ_AHEAD) res.pause();
    poke();
  });
  res.on('end', () => {
    ended = true;
    poke();
  });
  res.on('error', (err) => {
    failure ??= isAbort(err) ? err : new TypeError('terminated', { cause: err });
    poke();
  });
  res.on('close', () => {
    if (!ended)
      failure ??= new TypeError('terminated', { cause: new Error('the connection closed before the response ended') });
    // Past here a read never waits, so the listener goes: the SDK's signal is a composite
    // (AbortSignal.any), which Node keeps alive while it has abort listeners, and this one would
    // keep the whole response, and through its async context the activity, alive for ever.
    signal?.removeEventListener('abort', poke);
    poke();
  });
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // An abort is reported at once; any other end only once the chunks before it are read.
        while (chunks.length === 0 && !ended && failure === undefined && !signal?.aborted)
          await new Promise<void>((r) => (wake = r));
        if (signal?.aborted) return controller.error(abortError());
        const chunk = chunks.shift();
        if (chunk) {
          if (chunks.length < READ_AHEAD / 2) res.resume();
          return controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        }
        if (failure !== undefined) controller.error(failure);
        else controller.close();
      },
      cancel() {
        res.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}

function abortError(): Error {
  return new DOMException('This operation was aborted', 'AbortError');
}

function isAbort(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}
