import {
  ApplicationFailure,
  allHandlersFinished,
  patched,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { Harness, HarnessVersion, RegressionTask } from '../../common/improve/types';
import { acts, TOOL_CALL } from '../activity-proxies';

/**
 * A loop's harness store: every version of its improvable surface (v1 is the loop's built-in
 * harness), the current pointer, every change of that pointer with who and why, and the loop's
 * regression set. One long-lived workflow per loop, id `harness/<loop>`: durable, shared by every
 * client and worker, browsable in the Web UI, changed only through its updates.
 */
export interface HarnessState {
  loop: string;
  versions: HarnessVersion[];
  current: number;
  /** Every move of the current pointer (publish, rollback), oldest first. */
  moves: Array<{ at: string; by: string; from: number; to: number; reason: string }>;
  regression: RegressionTask[];
}

export interface HarnessWorkflowInput {
  loop: string;
  /** The loop's built-in harness: v1 on the first start. */
  builtIn: Harness;
  /** Carried over when the store continues as new. */
  state?: HarnessState;
}

/** The memo key holding `{ version, harness }` of the current version. */
export const HARNESS_MEMO = 'currentHarness';

export const harnessStateQuery = defineQuery<HarnessState>('harness');
/** Adds a version and makes it current (an approved improvement); returns its number. */
export const publishHarnessUpdate = defineUpdate<
  number,
  [{ harness: Harness; by: string; reason: string; proposedBy?: string }]
>('publish');
/** Points `current` at an earlier version; returns the version now current. */
export const rollbackHarnessUpdate = defineUpdate<number, [{ to?: number; by: string; reason: string }]>('rollback');
/** Adds a task to the regression set; returns its id. */
export const addRegressionUpdate = defineUpdate<
  string,
  [{ input: unknown; expect: 'pass' | 'fail'; fromRun?: string; by: string }]
>('addRegression');

export async function harnessWorkflow(input: HarnessWorkflowInput): Promise<void> {
  const now = () => new Date().toISOString();
  // Since 'verified-store', versions are carried over only by the store itself (continued as new),
  // never taken from a caller's start, and v1 is the loop's built-in harness as the worker has it
  // (read below, once the handlers are set: updates may come with the start).
  const verified = patched('verified-store');
  const carried = verified && !workflowInfo().continuedFromExecutionRunId ? undefined : input.state;
  const state: HarnessState = carried ?? {
    loop: input.loop,
    versions: [
      { version: 1, harness: input.builtIn, createdAt: now(), by: 'built-in', reason: "the loop's built-in harness" },
    ],
    current: 1,
    moves: [],
    regression: [],
  };
  // The memo carries the current version, so clients read it with `describe()`, even with no worker up.
  const show = () => {
    const current = state.versions.find((v) => v.version === state.current)!;
    upsertMemo({ [HARNESS_MEMO]: { version: current.version, harness: current.harness } });
    setCurrentDetails(
      `**${state.loop}** harness v${state.current} current · ${state.versions.length} versions · ${state.regression.length} regression tasks`,
    );
  };
  const move = (to: number, by: string, reason: string) => {
    state.moves.push({ at: now(), by, from: state.current, to, reason });
    state.current = to;
    show();
  };

  setHandler(harnessStateQuery, () => state);
  setHandler(
    publishHarnessUpdate,
    async ({ harness, by, reason, proposedBy }) => {
      // Since 'verified-publish', only an approved improvement's candidate is published (checked
      // against the improvement itself); publishes recorded before replay as they were.
      if (patched('verified-publish')) {
        const refused = await acts.publishRefusal.executeWithOptions(
          { ...TOOL_CALL, summary: `check the publish of ${state.loop}'s harness` },
          [{ loop: state.loop, harness, by, ...(proposedBy ? { proposedBy } : {}) }],
        );
        if (refused) throw ApplicationFailure.nonRetryable(refused, 'PublishRefused');
      }
      const version = state.versions.length + 1;
      state.versions.push({ version, harness, createdAt: now(), by, reason, ...(proposedBy ? { proposedBy } : {}) });
      move(version, by, reason);
      return version;
    },
    { validator: ({ by }) => requireWho(by) },
  );
  setHandler(
    rollbackHarnessUpdate,
    ({ to, by, reason }) => {
      const target = to ?? state.moves.at(-1)?.from ?? state.current - 1;
      move(target, by, reason);
      return target;
    },
    {
      validator: ({ to, by }) => {
        requireWho(by);
        const target = to ?? state.moves.at(-1)?.from ?? state.current - 1;
        if (target < 1)
          throw new Error(`${state.loop} is at its first harness version: there is nothing to roll back to`);
        if (!state.versions.some((v) => v.version === target))
          throw new Error(`${state.loop} has no harness v${target}: it has v1 to v${state.versions.length}`);
        if (target === state.current) throw new Error(`v${target} is already the current harness of ${state.loop}`);
      },
    },
  );
  setHandler(
    addRegressionUpdate,
    ({ input: task, expect, fromRun, by }) => {
      const id = `t${state.regression.length + 1}`;
      state.regression.push({ id, input: task, expect, ...(fromRun ? { fromRun } : {}), addedAt: now(), by });
      show();
      return id;
    },
    {
      validator: ({ fromRun, by }) => {
        requireWho(by);
        const dup = fromRun ? state.regression.find((t) => t.fromRun === fromRun) : undefined;
        if (dup) throw new Error(`run ${fromRun} is already regression task ${dup.id} of ${state.loop}`);
      },
    },
  );
  if (verified && !carried) {
    const builtIn = await acts.builtInHarness.executeWithOptions(
      { ...TOOL_CALL, summary: `${input.loop} built-in harness` },
      [{ loop: input.loop }],
    );
    state.versions[0] = { ...state.versions[0]!, harness: builtIn };
  }
  show();
  // The store lives until it is terminated; it hands over to a fresh history when Temporal suggests it.
  await condition(() => workflowInfo().continueAsNewSuggested);
  await condition(allHandlersFinished);
  await continueAsNew<typeof harnessWorkflow>({ ...input, state });
}

function requireWho(by: string): void {
  if (!by.trim()) throw new Error('say who decides (--by <name>): it is recorded');
}
