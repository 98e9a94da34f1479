import { metricsAddress } from '../../common/config';
import { portOpt } from '../prechecks';
import { sandboxConfigFromEnv } from '../../activities/sandbox/sandbox';
import { findBubblewrap } from '../../server/bubblewrap';
import { describePorts, type DevServerOptions } from '../../server/dev-server';
import type { StackOptions } from '../../workers/embedded-stack';
import { tuningLine, withTuningFlags, withTuningOptions, workerTuning } from '../../workers/tuning';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { modelEndpointNote, untilSignal } from './process';

export interface DevOptions {
  port?: string;
  uiPort?: string;
  httpPort?: string;
  metricsPort?: string;
  httpApi?: boolean;
  db?: string;
  headless?: boolean;
  metrics?: string;
  codecPort?: string;
}

/**
 * `dev`: the embedded default. Starts the Temporal dev server (SQLite under .loopwright/,
 * search attributes, 30-day retention, Web UI) and a worker; Ctrl-C stops both. Prints every
 * port the server listens on (all on 127.0.0.1); its HTTP API refuses requests unless --http-api.
 * With a key ring (LOOPWRIGHT_KEYS) it also starts the codec server the Web UI decodes through.
 */
export async function devCommand(
  opts: DevOptions & Record<string, unknown>,
  given: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  // The worker side loads @temporalio/worker (about 0.3 s), so only the commands that run it load it.
  const { startEmbeddedStack } = await import('../../workers/embedded-stack');
  const { sandboxNotice } = await import('../../workers/create-worker');
  const env = withTuningFlags(given, opts);
  // A bad tuning value is refused before the server starts.
  const tuning = workerTuning(env);
  // Install bubblewrap where this process may (root with apt-get); if it cannot, the worker says what that means at start.
  if (sandboxConfigFromEnv(env).mode === 'bwrap') await findBubblewrap({ env, log: io.err }).catch(() => undefined);
  const stackOptions: StackOptions & Pick<DevServerOptions, 'httpPort' | 'metricsPort' | 'httpApi'> = {
    env,
    port: numberOpt(opts.port),
    uiPort: numberOpt(opts.uiPort),
    httpPort: numberOpt(opts.httpPort),
    metricsPort: numberOpt(opts.metricsPort),
    httpApi: opts.httpApi,
    dbFile: opts.db,
    headless: opts.headless,
    metrics: opts.metrics ? metricsAddress(opts.metrics, '--metrics') : undefined,
    codecPort: numberOpt(opts.codecPort),
    log: io.err,
  };
  const stack = await startEmbeddedStack(stackOptions);
  io.out(`Temporal dev server: ${stack.address} (namespace ${stack.namespace})`);
  if (stack.uiUrl) io.out(`Web UI: ${stack.uiUrl}`);
  describePorts(stack.server.ports, stack.server.httpApi).forEach((line) => io.out(line));
  io.out(codecLine(stack.codec?.url, stack.server.codecEndpoint !== undefined));
  if (stack.metricsUrl) io.out(`worker metrics: ${stack.metricsUrl}`);
  io.out(`worker: task queue ${stack.taskQueue}`);
  io.err(sandboxNotice(stack.sandbox).line);
  io.err(modelEndpointNote(env));
  io.err(tuningLine(tuning));
  io.err('Ctrl-C stops the worker and the server.');
  await Promise.race([untilSignal(), stack.done]);
  io.err('stopping...');
  await stack.stop();
  io.err('stopped.');
  return 0;
}

/** The ports line for the codec server: where it is and what uses it, or why there is none. */
export function codecLine(url: string | undefined, uiUsesIt: boolean): string {
  if (!url) return '  codec     none (LOOPWRIGHT_KEYS is not set: payloads are stored in clear)';
  const port = new URL(url).port;
  return `  codec     ${port} (${url}: ${uiUsesIt ? 'the Web UI decodes payloads through it; ' : ''}temporal workflow show --codec-endpoint ${url})`;
}

/** A port option (0-65535), see client/prechecks.ts. */
export const numberOpt = portOpt;

/** `dev [--port 7233] [--ui-port 8233] ...` and the worker tuning options. */
export const devDefinition: CommandDefinition = (program, { action, env, io }) => {
  const dev = program
    .command('dev')
    .description('start the Temporal dev server (SQLite, Web UI) and a worker; Ctrl-C stops both')
    .option('--port <n>', 'gRPC port', '7233')
    .option('--ui-port <n>', 'Web UI port', '8233')
    .option('--http-port <n>', "port of the server's HTTP API (default: a free port)")
    .option(
      '--http-api',
      'let the HTTP API answer requests to 127.0.0.1 or localhost; any web page you open can then start and signal workflows through it (default: it refuses every request)',
    )
    .option('--metrics-port <n>', "port of the Temporal server's own /metrics (default: a free port)")
    .option('--db <file>', 'SQLite file (default .loopwright/dev.db)')
    .option('--headless', 'no Web UI')
    .option(
      '--metrics <host:port>',
      "serve the worker's Prometheus metrics there (default LOOPWRIGHT_METRICS, else 127.0.0.1:9464 when free)",
    )
    .option(
      '--codec-port <n>',
      'port of the codec server the Web UI decodes payloads through, started when LOOPWRIGHT_KEYS is set (default: a free port)',
    )
    .action(action((opts) => devCommand(opts, env, io)));
  withTuningOptions(dev);
};
