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
import {
  stampProblem,
  storeSeq,
  type RegressionRequest,
  type RollbackRequest,
  type StoreOp,
} from '../../common/improve/store-request';
import { acts, localActs, LOCAL_READ, TOOL_CALL } from '../activity-proxies';
import { regressionProblem, rollbackProblem, rollbackTarget } from './store-checks';

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
  moves: HarnessMove[];
  regression: RegressionTask[];
}

/**
 * A move of the current pointer. A rollback since 'signed-store-requests' says how its `by` was
 * established: `verified` (signed by a key the worker's allowed signers list for `by`, whose
 * `fingerprint` is kept) or not (the worker had no allowed signers); absent before.
 */
export interface HarnessMove {
  at: string;
  by: string;
  from: number;
  to: number;
  reason: string;
  kind?: 'publish' | 'rollback';
  verified?: boolean;
  fingerprint?: string;
}

/** The store as its query shows it: its state, and the stamp a request must carry (see common/improve/store-request.ts). */
export type HarnessView = HarnessState & { storeRun: string; seq: number };

export interface HarnessWorkflowInput {
  loop: string;
  /** The loop's built-in harness: v1 on the first start. */
  builtIn: Harness;
  /** Carried over when the store continues as new. */
  state?: HarnessState;
}

/** The memo key holding `{ version, harness }` of the current version. */
export const HARNESS_MEMO = 'currentHarness';

export const harnessStateQuery = defineQuery<HarnessView>('harness');
/** Adds a version and makes it current (an approved improvement); returns its number. */
export const publishHarnessUpdate = defineUpdate<
  number,
  [{ harness: Harness; by: string; reason: string; proposedBy?: string }]
>('publish');
/**
 * Points `current` at an earlier version; returns the version now current. Since
 * 'signed-store-requests' its sender is checked against the worker's allowed signers
 * (activities/store-request.ts) and its stamp against the store (common/improve/store-request.ts).
 */
export const rollbackHarnessUpdate = defineUpdate<number, [RollbackRequest]>('rollback');
/** Adds a task to the regression set; returns its id. Checked like a rollback. */
export const addRegressionUpdate = defineUpdate<string, [RegressionRequest]>('addRegression');

export async function harnessWorkflow(input: HarnessWorkflowInput): Promise<void> {
  const now = () => new Date().toISOString();
  // Since 'verified-store', versions are carried over only by the store itself (continued as new),
  // never taken from a caller's start, and v1 is the loop's built-in harness as the worker has it
  // (read below, once the handlers are set: updates may come with the start).
  const verified = patched('verified-store');
  const continuedFrom = workflowInfo().continuedFromExecutionRunId;
  let carried = verified && !continuedFrom ? undefined : input.state;
  const fresh = (): HarnessState => ({
    loop: input.loop,
    versions: [
      { version: 1, harness: input.builtIn, createdAt: now(), by: 'built-in', reason: "the loop's built-in harness" },
    ],
    current: 1,
    moves: [],
    regression: [],
  });
  const state: HarnessState = carried ?? fresh();
  // The memo carries the current version, so clients read it with `describe()`, even with no worker up.
  const show = () => {
    const current = state.versions.find((v) => v.version === state.current)!;
    upsertMemo({ [HARNESS_MEMO]: { version: current.version, harness: current.harness } });
    setCurrentDetails(
      `**${state.loop}** harness v${state.current} current · ${state.versions.length} versions · ${state.regression.length} regression tasks`,
    );
  };
  const move = (to: number, by: string, reason: string, extra: Partial<HarnessMove> = {}) => {
    state.moves.push({ at: now(), by, from: state.current, to, reason, ...extra });
    state.current = to;
    show();
  };

  const stamp = () => ({ storeRun: workflowInfo().firstExecutionRunId, seq: storeSeq(state), loop: state.loop });
  setHandler(harnessStateQuery, () => ({
    ...state,
    storeRun: workflowInfo().firstExecutionRunId,
    seq: storeSeq(state),
  }));
  /**
   * Since 'signed-store-requests': who sent a rollback or regression-add, checked by the worker
   * against its allowed signers as they are now (a local activity: the store lives for months, so
   * nothing is pinned at its start, and the workflow stays free of crypto and files); refused
   * (the update fails with the reason) when it is not signed by a key they list for its `by`, or
   * when the store changed while it was checked. Recorded as it was before without the patch.
   */
  const checkRequest = async (
    op: StoreOp,
    request: RollbackRequest | RegressionRequest,
    problem: () => string | null,
  ) => {
    const checked = await localActs.checkStoreRequest.executeWithOptions(
      { ...LOCAL_READ, summary: `check who sent the ${op} of ${state.loop}'s harness` },
      [{ workflowId: workflowInfo().workflowId, op, request }],
    );
    const refuse = (reason: string) =>
      ApplicationFailure.nonRetryable(`${op} refused: ${reason}`, 'StoreRequestRefused');
    if (!checked.ok) throw refuse(checked.reason);
    // Another request may have landed while this one was checked: it was made for the store before.
    const late = stampProblem(request, stamp()) ?? problem();
    if (late) throw refuse(late);
    return { verified: checked.verified, ...(checked.fingerprint ? { fingerprint: checked.fingerprint } : {}) };
  };
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
      move(version, by, reason, { kind: 'publish' });
      return version;
    },
    { validator: ({ by }) => requireWho(by) },
  );
  setHandler(
    rollbackHarnessUpdate,
    async (request) => {
      const { to, by, reason } = request;
      const signed = patched('signed-store-requests')
        ? { kind: 'rollback' as const, ...(await checkRequest('rollback', request, () => rollbackProblem(state, to))) }
        : {};
      const target = rollbackTarget(state, to);
      move(target, by, reason, signed);
      return target;
    },
    {
      validator: (request) => {
        requireWho(request.by);
        const problem = stampProblem(request, stamp()) ?? rollbackProblem(state, request.to);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(
    addRegressionUpdate,
    async (request) => {
      const { input: task, expect, fromRun, by } = request;
      const signed = patched('signed-store-requests')
        ? await checkRequest('addRegression', request, () => regressionProblem(state, fromRun))
        : {};
      const id = `t${state.regression.length + 1}`;
      state.regression.push({
        id,
        input: task,
        expect,
        ...(fromRun ? { fromRun } : {}),
        addedAt: now(),
        by,
        ...signed,
      });
      show();
      return id;
    },
    {
      validator: (request) => {
        requireWho(request.by);
        const problem = stampProblem(request, stamp()) ?? regressionProblem(state, request.fromRun);
        if (problem) throw new Error(problem);
      },
    },
  );
  // Since 'store-origin', carried versions are taken only from a store of this deployment: any
  // workflow of anyone's, on a queue of its own, under the store's id, can continue as new into a
  // harnessWorkflow on this queue with versions of its own (its harness current for every later run).
  if (carried && continuedFrom && patched('store-origin')) {
    const refused = await acts.continuedFromRefusal.executeWithOptions(
      { ...TOOL_CALL, summary: `check the store of ${input.loop} this one continued from` },
      [{ workflowId: workflowInfo().workflowId, runId: continuedFrom, types: [harnessWorkflow.name] }],
    );
    if (refused) {
      // Started afresh, as a caller's start is: the loop's built-in harness, nothing carried.
      for (const k of Object.keys(state)) delete (state as unknown as Record<string, unknown>)[k];
      Object.assign(state, fresh());
      carried = undefined;
    }
  }
  // Since 'store-id', a store that starts afresh holds the loop its id names (harness/<queue>/<loop>,
  // harness/store.ts): a start of anyone's under one loop's id naming another loop made that loop's
  // built-in harness the first one's current (its runs got another loop's prompt). It fails instead.
  const { workflowId, taskQueue } = workflowInfo();
  if (verified && !carried && workflowId !== `harness/${taskQueue}/${input.loop}` && patched('store-id'))
    throw ApplicationFailure.nonRetryable(
      `refused: a harness store for loop ${input.loop} on task queue ${taskQueue} is harness/${taskQueue}/${input.loop}, not ${workflowId}`,
      'StoreRefused',
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
