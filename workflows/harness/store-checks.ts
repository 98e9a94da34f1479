import type { HarnessState } from './harness-workflow';

// What a harness store refuses, pure: its update validators ask before a request is accepted,
// and its handlers again after a request's sender was checked (the store may have changed).

/** The version a rollback goes to: `to`, else where the last move came from, else the one before. */
export function rollbackTarget(state: HarnessState, to: number | undefined): number {
  return to ?? state.moves.at(-1)?.from ?? state.current - 1;
}

/** Why a rollback to `to` (or the default target) cannot be made now, or null. */
export function rollbackProblem(state: HarnessState, to: number | undefined): string | null {
  const target = rollbackTarget(state, to);
  if (target < 1) return `${state.loop} is at its first harness version: there is nothing to roll back to`;
  if (!state.versions.some((v) => v.version === target))
    return `${state.loop} has no harness v${target}: it has v1 to v${state.versions.length}`;
  if (target === state.current) return `v${target} is already the current harness of ${state.loop}`;
  return null;
}

/** Why a regression task from `fromRun` cannot be added now (one task per run), or null. */
export function regressionProblem(state: HarnessState, fromRun: string | undefined): string | null {
  const dup = fromRun ? state.regression.find((t) => t.fromRun === fromRun) : undefined;
  return dup ? `run ${fromRun} is already regression task ${dup.id} of ${state.loop}` : null;
}
