import { WorkflowIdConflictPolicy, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { UsageError } from '../common/errors';
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

/**
 * The loop's current harness, from the store's memo (so it needs no worker), or undefined when
 * the loop has no store yet: its runs use the built-in harness, v1.
 */
export async function currentHarness(
  temporal: Client,
  taskQueue: string,
  loop: string,
): Promise<CurrentHarness | undefined> {
  try {
    const description = await temporal.workflow.getHandle(harnessStoreId(taskQueue, loop)).describe();
    if (description.status.name !== 'RUNNING') return undefined;
    // Anyone can start a workflow with this id and a memo of their own: only the store, on this
    // deployment's queue, where this deployment's workers run it, is read.
    if (description.type !== harnessWorkflow.name || description.taskQueue !== taskQueue) return undefined;
    return description.memo?.[HARNESS_MEMO] as CurrentHarness | undefined;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
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
