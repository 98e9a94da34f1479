import { parseDuration } from './duration';
import type { LoopSpec, Models } from './loop-spec';

// What workflows read from a loop's spec, free of zod: workflows import this module, and the
// schemas in loop-spec.ts stay at the edges (see shape-check.ts for why).

/** A model call's limits when the loop sets none: the whole call, and the longest silence of its stream. */
export const DEFAULT_MODEL_TIMEOUTS = { total: '10m', idle: '60s' } as const;

/** A model call's limits in milliseconds, as the model activities take them. */
export interface ModelTimeouts {
  totalMs: number;
  idleMs: number;
}

/** The limits of a loop's model calls: its `models.timeouts`, defaults for what it leaves out (runs started before they existed included). */
export function modelTimeouts(models: Pick<Models, 'timeouts'>): ModelTimeouts {
  const t = models.timeouts ?? {};
  return {
    totalMs: parseDuration(t.total ?? DEFAULT_MODEL_TIMEOUTS.total) ?? 600_000,
    idleMs: parseDuration(t.idle ?? DEFAULT_MODEL_TIMEOUTS.idle) ?? 60_000,
  };
}

/**
 * A model call's timeouts as its activity's input carries them: only when the loop sets
 * `models.timeouts`. Otherwise none, and the model activity applies the same defaults
 * (`modelTimeouts({})`), so each of a run's model calls does not write them into history again.
 */
export function modelTimeoutsArg(models: Pick<Models, 'timeouts'>): { timeouts?: ModelTimeouts } {
  return models.timeouts ? { timeouts: modelTimeouts(models) } : {};
}

/**
 * True when the loop runs commands (the agent's `run_command`, a command check, a citations
 * check that reruns the tests): its runs need the worker's sandbox, and are refused by a worker
 * that has none (unless it opted out with LOOPWRIGHT_SANDBOX=off).
 */
export function runsCommands(spec: Pick<LoopSpec, 'agent' | 'checks'>): boolean {
  return (
    spec.agent.tools.includes('run_command') ||
    spec.checks.some(
      (c) => c.kind === 'command' || c.kind === 'tests' || (c.kind === 'citations' && c.testCommand !== undefined),
    )
  );
}
