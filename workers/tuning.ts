import type { Command } from 'commander';
import type { WorkerOptions } from '@temporalio/worker';
import { ConfigError } from '../common/errors';

/**
 * The worker tuning options `loopwright worker` and `dev` take, each by flag or environment
 * variable (the flag wins). One table: a new option is one row.
 *
 * The default that matters is the sticky cache: Temporal keeps every workflow it ran recently in
 * memory (the SDK's default sizes the cache from the heap, about 2,000 workflows at 4 GB), and a
 * run parked for a human costs memory there (about 2 MiB before the workflows lost zod and the
 * `common/` modules were preloaded, under 1 MiB since). Loopwright caps it at 100: a parked run evicted
 * from the cache is replayed from its history when its decision arrives (a few ms of CPU), which
 * is what durability is for. The other options keep Temporal's defaults unless set.
 */
export interface TuningOption {
  /** The CLI flag, without `--`. */
  flag: string;
  env: string;
  option:
    | 'maxCachedWorkflows'
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentActivityTaskExecutions'
    | 'maxConcurrentWorkflowTaskPolls'
    | 'maxConcurrentActivityTaskPolls';
  min: number;
  /** Loopwright's default; undefined keeps Temporal's. */
  default?: number;
  help: string;
}

export const DEFAULT_MAX_CACHED_WORKFLOWS = 100;

export const TUNING_OPTIONS: readonly TuningOption[] = [
  {
    flag: 'max-cached-workflows',
    env: 'LOOPWRIGHT_MAX_CACHED_WORKFLOWS',
    option: 'maxCachedWorkflows',
    min: 0,
    default: DEFAULT_MAX_CACHED_WORKFLOWS,
    help: `runs kept in the sticky cache (default ${DEFAULT_MAX_CACHED_WORKFLOWS}); others replay from history when they wake, 0 for none`,
  },
  {
    flag: 'workflow-slots',
    env: 'LOOPWRIGHT_WORKFLOW_SLOTS',
    option: 'maxConcurrentWorkflowTaskExecutions',
    min: 2,
    help: "workflow tasks run at once (Temporal's default 40)",
  },
  {
    flag: 'activity-slots',
    env: 'LOOPWRIGHT_ACTIVITY_SLOTS',
    option: 'maxConcurrentActivityTaskExecutions',
    min: 1,
    help: "activities (model calls, tools, checks) run at once (Temporal's default 100)",
  },
  {
    flag: 'workflow-pollers',
    env: 'LOOPWRIGHT_WORKFLOW_POLLERS',
    option: 'maxConcurrentWorkflowTaskPolls',
    min: 2,
    help: "concurrent polls for workflow tasks (Temporal's default min(10, workflow slots))",
  },
  {
    flag: 'activity-pollers',
    env: 'LOOPWRIGHT_ACTIVITY_POLLERS',
    option: 'maxConcurrentActivityTaskPolls',
    min: 1,
    help: "concurrent polls for activity tasks (Temporal's default min(10, activity slots))",
  },
];

type Tuning = Pick<WorkerOptions, TuningOption['option']>;

/** The tuning a worker with this environment uses; a value that is not a whole number in range is a ConfigError naming it. */
export function workerTuning(env: Record<string, string | undefined>): Tuning {
  const tuning: Tuning = {};
  for (const o of TUNING_OPTIONS) {
    const raw = env[o.env];
    const value = raw === undefined || raw === '' ? o.default : parseWhole(raw, o);
    if (value !== undefined) tuning[o.option] = value;
  }
  pollersWithin(tuning.maxConcurrentWorkflowTaskPolls, tuning.maxConcurrentWorkflowTaskExecutions ?? 40, 'workflow');
  pollersWithin(tuning.maxConcurrentActivityTaskPolls, tuning.maxConcurrentActivityTaskExecutions ?? 100, 'activity');
  return tuning;
}

function pollersWithin(pollers: number | undefined, slots: number, kind: string): void {
  if (pollers !== undefined && pollers > slots)
    throw new ConfigError(
      `${kind} pollers (${pollers}) cannot exceed ${kind} slots (${slots}): lower --${kind}-pollers or raise --${kind}-slots`,
    );
}

function parseWhole(raw: string, o: TuningOption): number {
  const n = /^\d{1,9}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(n) || n < o.min)
    throw new ConfigError(
      `--${o.flag} / ${o.env} must be a whole number of at least ${o.min}, not "${raw.slice(0, 40)}"`,
    );
  return n;
}

/** The environment with the tuning flags commander parsed (camelCase keys of `opts`) laid over it. */
export function withTuningFlags(
  env: Record<string, string | undefined>,
  opts: Record<string, unknown>,
): Record<string, string | undefined> {
  const out = { ...env };
  for (const o of TUNING_OPTIONS) {
    const key = o.flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (opts[key] !== undefined) out[o.env] = String(opts[key]);
  }
  return out;
}

/** One line for the worker's start: the tuning in effect. */
export function tuningLine(tuning: Tuning): string {
  return `tuning: ${TUNING_OPTIONS.map((o) => `${o.flag} ${tuning[o.option] ?? 'default'}`).join(', ')}`;
}

/** The tuning flags on `worker` and `dev`; each also reads its environment variable. */
export function withTuningOptions(cmd: Command): Command {
  for (const o of TUNING_OPTIONS) cmd.option(`--${o.flag} <n>`, `${o.help}; env ${o.env}`);
  return cmd;
}
