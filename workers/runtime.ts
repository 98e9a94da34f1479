import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ConfigError } from '../common/errors';

let installed: { metrics?: string } | undefined;

export interface RuntimeOptions {
  level?: 'WARN' | 'INFO' | 'DEBUG';
  /**
   * `host:port` to serve Prometheus metrics on (`/metrics`): Temporal's runtime metrics
   * (`temporal_*`: task slots, poll and schedule-to-start latencies, activity and workflow
   * results) and Loopwright's own (`loopwright_*`, see workflows/metrics.ts). None: no endpoint.
   */
  metrics?: string;
}

/**
 * Installs the Temporal worker runtime once per process: warnings and errors only on the
 * terminal, no signal handlers of its own (the process entry points shut down in order), and
 * the Prometheus endpoint when `metrics` is given. Counters get the usual `_total` suffix.
 */
export function installRuntime(opts: RuntimeOptions = {}): void {
  if (installed) {
    if (opts.metrics && installed.metrics !== opts.metrics) throw new ConfigError(`the worker runtime of this process is already installed without metrics on ${opts.metrics}: start a new process`);
    return;
  }
  installed = { metrics: opts.metrics };
  Runtime.install({
    logger: new DefaultLogger(opts.level ?? 'WARN'),
    shutdownSignals: [],
    ...(opts.metrics ? { telemetryOptions: { metrics: { prometheus: { bindAddress: opts.metrics, countersTotalSuffix: true, useSecondsForDurations: true } } } } : {}),
  });
}
