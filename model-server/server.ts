import { appendFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { LoopwrightError, UsageError } from '../common/errors';
import { baseUrl, messagesBodyProblems, readBody, sendJson, waitUnlessClosed } from './http';
import { readRequestFacts, RuleBook } from './match';
import { buildMessage, errorBody, newId, type ScriptedUsage } from './reply';
import type { ModelScript } from './script';
import { messageStreamEvents } from './sse';
import { writeStream, type StreamPlan } from './stream-writer';

/** Status recorded for a request whose client disconnected before the answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

/** One request the scripted model received, in arrival order. */
export interface RecordedRequest {
  /** Arrival time, ISO 8601. */
  at: string;
  role?: string;
  attempt?: number;
  turn?: number;
  workflowId?: string;
  /** `model` of the body, or "" when absent. */
  model: string;
  /** The system prompt flattened to text. */
  system: string;
  /** Text of the last user message (text blocks and tool_result text). */
  lastUser: string;
  /** The full JSON body (the raw text when it was not valid JSON). */
  body: unknown;
  /** Name of the rule that answered, or null when none did. */
  rule: string | null;
  /** HTTP status sent; {@link CLIENT_CLOSED_STATUS} when the client left during `delayMs`. */
  status: number;
  /**
   * The usage the answer reported on the wire: a plain reply's, or for a stream the last one
   * sent (message_start's, then message_delta's); absent when none was sent (errors, a stream
   * cut before message_start). Updated while a stream goes out.
   */
  usage?: ScriptedUsage;
  /** SSE events sent (a streamed answer only), the faulty one included. */
  events?: number;
  /** The scripted fault this answer had, e.g. `drop after 1 events`. */
  fault?: string;
}

/** Options of {@link startModelServer}. */
export interface ModelServerOptions {
  script: ModelScript;
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** Append one JSON line per request to this file. */
  logFile?: string;
}

/** A running scripted model server. */
export interface ModelServer {
  /** Base URL to use as ANTHROPIC_BASE_URL (or the SDK's `baseURL`), e.g. http://127.0.0.1:8765. */
  url: string;
  port: number;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Stops listening, drops open connections and flushes the log file. */
  close(): Promise<void>;
}

type Answer = { delayMs?: number } & (
  { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> } | ({ kind: 'stream' } & StreamPlan)
);

/**
 * Starts an HTTP server that speaks the Anthropic Messages API (`POST /v1/messages`, plain
 * and `stream: true`) to the real SDK, answering from `script`: rules are tried in order and
 * the first that matches and has answers left answers. A request no rule answers gets a 500
 * `api_error` saying so. Rejects with {@link UsageError} when the port is taken or the log
 * file cannot be written.
 */
export async function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const host = opts.host ?? '127.0.0.1';
  const book = new RuleBook(opts.script);
  const requests: RecordedRequest[] = [];
  const logFile = opts.logFile;
  let logChain: Promise<void> = Promise.resolve();
  if (logFile !== undefined) {
    await appendFile(logFile, '').catch((err: unknown) => {
      throw new UsageError(`cannot write model server log ${logFile}: ${String(err)}`, { cause: err });
    });
  }

  const log = (record: RecordedRequest): void => {
    if (logFile === undefined) return;
    const { at, role, attempt, turn, workflowId, model, rule, status, system, lastUser, body, usage, fault } = record;
    const line = {
      ...{ at, role: role ?? null, attempt: attempt ?? null, turn: turn ?? null, workflowId: workflowId ?? null },
      ...{
        model,
        rule,
        status,
        ...(usage ? { usage } : {}),
        ...(fault ? { fault } : {}),
        system,
        lastUser,
        request: body,
      },
    };
    logChain = logChain
      .then(() => appendFile(logFile, `${JSON.stringify(line)}\n`))
      .catch((err: unknown) => process.emitWarning(`model server could not append to ${logFile}: ${String(err)}`));
  };

  const decide = (
    req: IncomingMessage,
    raw: string,
    json: boolean,
    record: RecordedRequest,
    requestId: string,
  ): Answer => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'POST' || path !== '/v1/messages') {
      const message = `scripted model: no route ${req.method ?? '?'} ${path}; only POST /v1/messages is served`;
      return { kind: 'json', status: 404, body: errorBody(404, message, requestId) };
    }
    if (!json) {
      return {
        kind: 'json',
        status: 400,
        body: errorBody(400, 'scripted model: request body is not valid JSON', requestId),
      };
    }
    const problems = messagesBodyProblems(record.body);
    if (problems.length > 0) return { kind: 'json', status: 400, body: errorBody(400, problems.join('; '), requestId) };
    const rule = book.take(record);
    if (!rule) return { kind: 'json', status: 500, body: errorBody(500, book.describeNoMatch(record), requestId) };
    record.rule = rule.name;
    const delayMs = rule.delayMs;
    if (rule.error) {
      const { status, headers, body } = rule.error;
      const fallback = errorBody(status, `scripted error from rule "${rule.name}"`, requestId);
      return { kind: 'json', status, headers, body: body === undefined ? fallback : body, delayMs };
    }
    const message = buildMessage(rule.reply ?? { content: [] }, record.model, raw.length);
    const stream = (record.body as { stream?: unknown }).stream === true;
    if (stream)
      return {
        kind: 'stream',
        events: messageStreamEvents(message),
        eventDelayMs: rule.eventDelayMs,
        fault: rule.fault,
        delayMs,
      };
    if (rule.fault) {
      const problem = `scripted model: rule "${rule.name}" scripts a ${rule.fault.kind} fault of a stream; send "stream": true`;
      return { kind: 'json', status: 400, body: errorBody(400, problem, requestId) };
    }
    return { kind: 'json', status: 200, body: message, delayMs };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const at = new Date().toISOString();
    const raw = await readBody(req);
    let body: unknown = raw;
    let json = true;
    try {
      body = JSON.parse(raw);
    } catch {
      json = false; // Kept as text: `decide` answers 400 and the record shows what was sent.
    }
    const record: RecordedRequest = { at, ...readRequestFacts(req.headers, body), body, rule: null, status: 0 };
    requests.push(record);
    const requestId = newId('req');
    const answer = decide(req, raw, json, record, requestId);
    record.status = answer.kind === 'json' ? answer.status : 200;
    if (!(await waitUnlessClosed(res, answer.delayMs ?? 0))) {
      record.status = CLIENT_CLOSED_STATUS;
      log(record);
      return;
    }
    const headers = { 'request-id': requestId };
    if (answer.kind === 'json') {
      if (answer.status === 200) record.usage = { ...(answer.body as { usage: ScriptedUsage }).usage };
      sendJson(res, answer.status, answer.body, { ...headers, ...answer.headers });
    } else {
      // The record shows the stream's progress as it goes (a test may wait for message_start).
      await writeStream(res, answer, Object.assign(record, { events: 0 }), headers);
    }
    log(record);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorBody(500, `scripted model crashed: ${String(err)}`, newId('req')), {});
      else res.destroy();
    });
  });
  const port = await listen(server, opts.port ?? 0, host);
  return {
    url: baseUrl(host, port),
    port,
    requests,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await logChain;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(
          new UsageError(
            `cannot start the model server: ${host}:${port} is already in use; pick another port (0 = any free port)`,
          ),
        );
      } else {
        reject(new LoopwrightError(`cannot start the model server on ${host}:${port}: ${err.message}`, { cause: err }));
      }
    });
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}
