import { format } from 'node:util';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { ConfigError } from '../common/errors';
import { redact, type Redaction } from '../common/redact';
import { processRedaction } from '../crypto/ring-redaction';
import { escapeBlock } from '../common/terminal';

let installed: { metrics?: string } | undefined;

export interface RuntimeOptions {
  level?: 'WARN' | 'INFO' | 'DEBUG';
  /**
   * `host:port` to serve Prometheus metrics on (`/metrics`): Temporal's runtime metrics
   * (`temporal_*`: task slots, poll and schedule-to-start latencies, activity and workflow
   * results) and Loopwright's own (`loopwright_*`, see workflows/loop/metrics.ts). None: no endpoint.
   */
  metrics?: string;
  /** Whose secrets the log redacts: this environment's (default: the process's). */
  env?: Record<string, string | undefined>;
}

/**
 * The worker's log lines as Temporal's default logger writes them (time, level, message, meta),
 * redacted with the process's own secrets and escaped for a terminal: the SDK logs an activity's
 * failure with its message and stack, which can quote a tool's output or the model's text.
 */
export function redactingLog(
  redaction: Redaction,
  write: (line: string) => void = (line) => process.stderr.write(line),
) {
  return ({ level, timestampNanos, message, meta }: LogEntry): void => {
    const line = `${new Date(Number(timestampNanos / 1_000_000n)).toISOString()} [${level}] ${message}${meta === undefined ? '' : ` ${format(meta)}`}`;
    write(`${escapeBlock(redact(line, redaction))}\n`);
  };
}

/**
 * Installs the Temporal worker runtime once per process: warnings and errors only on the
 * terminal, redacted (see {@link redactingLog}), no signal handlers of its own (the process entry points shut down in order), and
 * the Prometheus endpoint when `metrics` is given. Counters get the usual `_total` suffix.
 */
export function installRuntime(opts: RuntimeOptions = {}): void {
  if (installed) {
    if (opts.metrics && installed.metrics !== opts.metrics)
      throw new ConfigError(
        `the worker runtime of this process is already installed without metrics on ${opts.metrics}: start a new process`,
      );
    return;
  }
  installed = { metrics: opts.metrics };
  Runtime.install({
    logger: new DefaultLogger(opts.level ?? 'WARN', redactingLog(processRedaction(opts.env ?? process.env))),
    shutdownSignals: [],
    ...(opts.metrics
      ? {
          telemetryOptions: {
            metrics: {
              prometheus: { bindAddress: opts.metrics, countersTotalSuffix: true, useSecondsForDurations: true },
            },
          },
        }
      : {}),
  });
}
