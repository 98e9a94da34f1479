import {
  WorkflowIdConflictPolicy,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { LoopwrightError, UsageError } from '../common/errors';
import type { CurrentHarness, Harness } from '../common/improve/types';
import {
  storeRequestMessage,
  type RegressionRequest,
  type RollbackRequest,
  type StoreOp,
} from '../common/improve/store-request';
import { getLoop } from '../loops';
import {
  addRegressionUpdate,
  HARNESS_MEMO,
  harnessStateQuery,
  publishHarnessUpdate,
  rollbackHarnessUpdate,
  type HarnessView,
  harnessWorkflow,
} from '../workflows/harness/harness-workflow';

/**
 * The id of a loop's harness store: one workflow per loop and task queue, because a task queue is
 * one deployment of Loopwright (its workers, runs and regression sets); `harness/loopwright/<loop>`
 * for the default queue.
 */
export const harnessStoreId = (taskQueue: string, loop: string) => `harness/${taskQueue}/${loop}`;

/** How long {@link currentHarness} waits for a worker to run the first task of a store's run. */
export const STORE_VOUCH_WAIT_MS = 5_000;

/**
 * A running harness store whose memo holds a harness no worker has vouched for yet: its run has
 * not completed a workflow task, so the memo is whatever its start (or a continue-as-new) set.
 */
export class UnvouchedHarnessError extends LoopwrightError {
  constructor(loop: string, taskQueue: string, waitedMs: number) {
    super(
      `the harness store of ${loop} shows a current harness that no worker has confirmed yet (no worker ran its first task in ${Math.round(waitedMs / 1000)} s): start a worker on task queue ${taskQueue} (\`npx loopwright worker\`) and start the run again`,
    );
  }
}

/**
 * The loop's current harness, from the store's memo (so it needs no worker once the store has
 * run), or undefined when the loop has no store yet: its runs use the built-in harness, v1.
 *
 * Anyone who can start workflows can start one under the store's id, as a `harnessWorkflow` on
 * this queue, with a memo of their own (or continue a workflow of theirs as one): the memo is
 * the store's own only once a worker of this deployment has completed a task of that run, which
 * upserts it (the server then records the worker's build on the run). Until then a memo is not
 * read: the call waits up to `waitMs` for the worker, then throws {@link UnvouchedHarnessError}.
 * A store with no memo yet (just started by {@link publishHarness}) holds the built-in, v1.
 */
export async function currentHarness(
  temporal: Client,
  taskQueue: string,
  loop: string,
  { waitMs = STORE_VOUCH_WAIT_MS }: { waitMs?: number } = {},
): Promise<CurrentHarness | undefined> {
  const handle = temporal.workflow.getHandle(harnessStoreId(taskQueue, loop));
  const since = Date.now();
  for (;;) {
    let description: WorkflowExecutionDescription;
    try {
      description = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
    if (description.status.name !== 'RUNNING') return undefined;
    // Only the store, on this deployment's queue, where this deployment's workers run it, is read.
    if (description.type !== harnessWorkflow.name || description.taskQueue !== taskQueue) return undefined;
    const memo = description.memo?.[HARNESS_MEMO] as CurrentHarness | undefined;
    if (!memo || ranByWorker(description)) return memo;
    if (Date.now() - since >= waitMs) throw new UnvouchedHarnessError(loop, taskQueue, waitMs);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Whether a worker has completed a workflow task of this run: the server records the build of the
 * worker that did (and a reset point of the run at its first completed task). A start or a
 * continue-as-new sets neither, and neither survives into a new run.
 */
function ranByWorker(description: WorkflowExecutionDescription): boolean {
  const info = description.raw.workflowExecutionInfo;
  return (
    !!info?.mostRecentWorkerVersionStamp?.buildId ||
    (info?.autoResetPoints?.points ?? []).some((p) => p.runId === description.runId)
  );
}

/** Every version, the pointer's moves and the regression set (a worker answers the query). */
export async function harnessState(temporal: Client, loop: string, taskQueue: string): Promise<HarnessView> {
  return (await store(temporal, loop, taskQueue)).query(harnessStateQuery);
}

/** Adds a version and makes it current; runs that start afterwards use it. */
export async function publishHarness(
  temporal: Client,
  taskQueue: string,
  req: { loop: string; harness: Harness; by: string; reason: string; proposedBy?: string },
): Promise<number> {
  const { loop, ...rest } = req;
  return update(() =>
    store(temporal, loop, taskQueue).then((h) => h.executeUpdate(publishHarnessUpdate, { args: [rest] })),
  );
}

/**
 * Signs a store request: over the store's id, the operation and the request (see
 * common/improve/store-request.ts); returns undefined to send it unsigned. `LoopwrightClient.sign`.
 */
export type StoreSigner = (message: string) => string | undefined;

/**
 * Points the current harness back to the version before (or to `to`). The request names the
 * store's state now (so it lands once) and is signed with `sign` when it gives a signature; a
 * worker with allowed signers refuses it unsigned or signed by a key they do not list for `by`.
 */
export async function rollbackHarness(
  temporal: Client,
  taskQueue: string,
  req: { loop: string; to?: number; by: string; reason: string },
  sign?: StoreSigner,
): Promise<number> {
  const { loop, ...rest } = req;
  return send(temporal, taskQueue, loop, 'rollback', rest, sign, (h, request: RollbackRequest) =>
    h.executeUpdate(rollbackHarnessUpdate, { args: [request] }),
  );
}

/** Adds a task to the loop's regression set; returns its id. Stamped and signed as a rollback is. */
export async function addRegression(
  temporal: Client,
  taskQueue: string,
  req: { loop: string; input: unknown; expect: 'pass' | 'fail'; fromRun?: string; by: string },
  sign?: StoreSigner,
): Promise<string> {
  const { loop, ...rest } = req;
  return send(temporal, taskQueue, loop, 'addRegression', rest, sign, (h, request: RegressionRequest) =>
    h.executeUpdate(addRegressionUpdate, { args: [request] }),
  );
}

/** Stamps `request` with the store's state, signs it, and sends it with `execute`. */
async function send<R extends RollbackRequest | RegressionRequest, T>(
  temporal: Client,
  taskQueue: string,
  loop: string,
  op: StoreOp,
  request: R,
  sign: StoreSigner | undefined,
  execute: (h: Awaited<ReturnType<typeof store>>, request: R) => Promise<T>,
): Promise<T> {
  return update(async () => {
    const h = await store(temporal, loop, taskQueue);
    const { storeRun, seq } = await h.query(harnessStateQuery);
    const stamped: R = { ...request, storeRun, seq };
    const signature = sign?.(storeRequestMessage(h.workflowId, op, stamped));
    return execute(h, signature ? { ...stamped, signature } : stamped);
  });
}

/** The loop's store, started with its built-in harness as v1 when it does not exist yet. */
async function store(temporal: Client, loop: string, taskQueue: string) {
  const builtIn = getLoop(loop).harness;
  return temporal.workflow.start(harnessWorkflow, {
    taskQueue,
    workflowId: harnessStoreId(taskQueue, loop),
    args: [{ loop, builtIn }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    staticSummary: `${loop}: harness versions and regression set`,
  });
}

/** Runs an update; a validator's refusal becomes a UsageError (exit 2) with its message. */
async function update<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause;
    const name = (err as { name?: string }).name;
    if (name === 'WorkflowUpdateFailedError' && cause?.message) throw new UsageError(cause.message);
    throw err;
  }
}
