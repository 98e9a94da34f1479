import { loadModelScript } from './script';
import { startModelServer, type ModelServer } from './server';

/** Port the `model-server` command listens on unless told otherwise. */
export const DEFAULT_MODEL_SERVER_PORT = 8765;

/** Options of {@link runModelServerCommand}. */
export interface RunModelServerOptions {
  /** JSON script file (see docs/model-server.md). */
  scriptPath: string;
  /** Default {@link DEFAULT_MODEL_SERVER_PORT}; 0 picks a free port. */
  port?: number;
  /** Append one JSON line per request to this file. */
  logFile?: string;
  /** Where the one-line banner goes; default stdout. */
  out?: (line: string) => void;
}

/**
 * The `model-server` command: loads the script, starts the server on 127.0.0.1 and prints
 * one line with its URL. Returns the running server; the caller keeps the process alive and
 * calls `close()` on SIGINT/SIGTERM. Throws InputError/UsageError for a bad script file or
 * a port in use.
 */
export async function runModelServerCommand(opts: RunModelServerOptions): Promise<ModelServer> {
  const script = await loadModelScript(opts.scriptPath);
  const server = await startModelServer({
    script,
    port: opts.port ?? DEFAULT_MODEL_SERVER_PORT,
    logFile: opts.logFile,
  });
  const out = opts.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const rules = `${script.rules.length} rule${script.rules.length === 1 ? '' : 's'}`;
  const log = opts.logFile === undefined ? '' : `, log: ${opts.logFile}`;
  out(
    `model server listening on ${server.url} (script: ${opts.scriptPath}, ${rules}${log}); set ANTHROPIC_BASE_URL to it`,
  );
  return server;
}
