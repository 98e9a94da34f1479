import { ConfigError } from './errors';
import { redactNames } from './redact';
import { escapeLine, firstUnprintable } from './terminal';

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

/** `host`, `host:port` or `[ipv6]:port`: what Temporal's clients take as an address. */
const ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::(\d{1,5}))?$/;
/** Temporal namespace names: letters, digits and `._-`. */
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** A value of `name` that cannot work: a ConfigError (exit 2) that quotes it, escaped and cut short. */
function badValue(name: string, value: string, want: string): ConfigError {
  const shown = value.length > 60 ? `${value.slice(0, 60)}…(${value.length} characters)` : value;
  return new ConfigError(`${name} "${escapeLine(shown)}" is not valid: ${want}`);
}

/** A setting that is one word: at most `max` characters, no space, control or invisible character. */
function word(
  env: Record<string, string | undefined>,
  name: string,
  fallback: string,
  want: string,
  max = 200,
): string {
  const value = pick(env, name, fallback);
  if (value.length > max || /\s/.test(value) || firstUnprintable(value) || /[\ud800-\udfff\ufffd]/.test(value))
    throw badValue(name, value, want);
  return value;
}

/**
 * The settings from `env`, each checked: a malformed TEMPORAL_ADDRESS (not `host:port`),
 * TEMPORAL_NAMESPACE (not letters, digits and `._-`), LOOPWRIGHT_TASK_QUEUE or model id (a
 * space, a control character, over 200 characters) is a ConfigError (exit 2) before anything
 * connects. Empty values mean the default.
 */
export function readConfig(env: Record<string, string | undefined>): LoopwrightConfig {
  const temporalAddress = pick(env, 'TEMPORAL_ADDRESS', 'localhost:7233');
  const address = ADDRESS.exec(temporalAddress);
  if (!address || (address[2] !== undefined && !(Number(address[2]) >= 1 && Number(address[2]) <= 65535))) {
    throw badValue('TEMPORAL_ADDRESS', temporalAddress, 'give host:port of the Temporal server, e.g. localhost:7233');
  }
  const namespace = pick(env, 'TEMPORAL_NAMESPACE', 'default');
  if (!NAMESPACE.test(namespace))
    throw badValue(
      'TEMPORAL_NAMESPACE',
      namespace,
      'a namespace name is letters, digits and ._- (at most 255), e.g. default',
    );
  return {
    temporalAddress,
    namespace,
    taskQueue: word(
      env,
      'LOOPWRIGHT_TASK_QUEUE',
      'loopwright',
      'a task queue name is one word of printable characters (at most 200), e.g. loopwright',
    ),
    workerModel: word(
      env,
      'LOOPWRIGHT_WORKER_MODEL',
      DEFAULT_WORKER_MODEL,
      `give a model id, e.g. ${DEFAULT_WORKER_MODEL}`,
    ),
    checkerModel: word(
      env,
      'LOOPWRIGHT_CHECKER_MODEL',
      DEFAULT_CHECKER_MODEL,
      `give a model id, e.g. ${DEFAULT_CHECKER_MODEL}`,
    ),
    redact: redactNames(env),
    metrics: env.LOOPWRIGHT_METRICS?.trim() ? metricsAddress(env.LOOPWRIGHT_METRICS, 'LOOPWRIGHT_METRICS') : undefined,
  };
}

/** `host:port` with a port number, or a ConfigError that says what to give. */
export function metricsAddress(value: string, from: string): string {
  const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value.trim());
  if (!m || Number(m[2]) > 65535)
    throw new ConfigError(
      `${from} "${value}" is not host:port: give an address to serve metrics on, e.g. 127.0.0.1:9464`,
    );
  return value.trim();
}
