import { DefaultLogger, Runtime } from '@temporalio/worker';

let installed = false;

/**
 * Installs the Temporal worker runtime once per process: warnings and errors only on the
 * terminal, and no signal handlers of its own (the process entry points shut down in order).
 */
export function installRuntime(level: 'WARN' | 'INFO' | 'DEBUG' = 'WARN'): void {
  if (installed) return;
  installed = true;
  Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
}
