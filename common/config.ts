import { ConfigError } from './errors';
import { redactNames } from './redact';

/**
 * Settings read from the environment, with their defaults. Pure: callers pass `process.env`.
 */
export interface LoopwrightConfig {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  workerModel: string;
  checkerModel: string;
  /** LOOPWRIGHT_METRICS: `host:port` a worker serves Prometheus metrics on; none by default (`dev` picks 127.0.0.1:9464). */
  metrics?: string;
  /** LOOPWRIGHT_REDACT: more names whose values are secrets (see common/redact.ts). */
  redact: string[];
}

/** Current Claude model ids; override per role with LOOPWRIGHT_WORKER_MODEL / LOOPWRIGHT_CHECKER_MODEL. */
export const DEFAULT_WORKER_MODEL = 'claude-sonnet-5-5';
export const DEFAULT_CHECKER_MODEL = 'claude-haiku-5-5';

function pick(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const value = env[name]?.trim();
  return value ? value : fallback;
}

export function readConfig(env: Record<string, string | undefined>): LoopwrightConfig {
  return {
    temporalAddress: pick(env, 'TEMPORAL_ADDRESS', 'localhost:7233'),
    namespace: pick(env, 'TEMPORAL_NAMESPACE', 'default'),
    taskQueue: pick(env, 'LOOPWRIGHT_TASK_QUEUE', 'loopwright'),
    workerModel: pick(env, 'LOOPWRIGHT_WORKER_MODEL', DEFAULT_WORKER_MODEL),
    checkerModel: pick(env, 'LOOPWRIGHT_CHECKER_MODEL', DEFAULT_CHECKER_MODEL),
    redact: redactNames(env),
    metrics: env.LOOPWRIGHT_METRICS?.trim() ? metricsAddress(env.LOOPWRIGHT_METRICS, 'LOOPWRIGHT_METRICS') : undefined,
  };
}

/** `host:port` with a port number, or a ConfigError that says what to give. */
export function metricsAddress(value: string, from: string): string {
  const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value.trim());
  if (!m || Number(m[2]) > 65535) throw new ConfigError(`${from} "${value}" is not host:port: give an address to serve metrics on, e.g. 127.0.0.1:9464`);
  return value.trim();
}
