/**
 * Settings read from the environment, with their defaults. Pure: callers pass `process.env`.
 */
export interface LoopwrightConfig {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  workerModel: string;
  checkerModel: string;
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
  };
}
