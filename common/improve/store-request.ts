import { canonicalJson } from '../sshsig';

// A person's change to a loop's harness store (a rollback, a regression task), signed like a
// decision. Pure, free of zod: the store workflow, the worker's check and the client share it.

/** The store operations a person signs. */
export type StoreOp = 'rollback' | 'addRegression';

/**
 * Which state of which store a request was made against: `storeRun`, the first run id of the
 * store's chain (the same across continue-as-new, new when the store is terminated and started
 * again), and `seq`, the number of changes the store had recorded ({@link storeSeq}). The store
 * accepts a request only while both still match, so a signed request lands at most once: its
 * own landing makes `seq` move on. No list of spent ids is kept, so none can overflow.
 */
export interface StoreStamp {
  storeRun?: string;
  seq?: number;
}

/** What `rollback` carries. */
export type RollbackRequest = StoreStamp & { to?: number; by: string; reason: string; signature?: string };

/** What `addRegression` carries. */
export type RegressionRequest = StoreStamp & {
  input: unknown;
  expect: 'pass' | 'fail';
  fromRun?: string;
  by: string;
  signature?: string;
};

/** The number of changes a store has recorded: every move of its pointer and every regression task (both only grow). */
export function storeSeq(state: { moves: unknown[]; regression: unknown[] }): number {
  return state.moves.length + state.regression.length;
}

/**
 * What a signature over a store request covers: the store's workflow id, the operation and every
 * field of the request (its stamp too), without the signature. The first line differs from a
 * decision's, so neither can pass for the other.
 */
export function storeRequestMessage(
  workflowId: string,
  op: StoreOp,
  request: RollbackRequest | RegressionRequest,
): string {
  const { signature: _signature, ...rest } = request;
  return `loopwright harness-store v1\n${canonicalJson({ workflowId, op, request: rest })}`;
}

/** Why a request's stamp does not fit the store as it is now, or null. */
export function stampProblem(request: StoreStamp, now: { storeRun: string; seq: number; loop: string }): string | null {
  if (request.storeRun !== undefined && request.storeRun !== now.storeRun)
    return `the request was made for another harness store of ${now.loop} (run ${request.storeRun}, this one is ${now.storeRun}): make it again`;
  if (request.seq !== undefined && request.seq !== now.seq)
    return `the harness store of ${now.loop} has changed since the request was made (it was at change ${request.seq}, it is at ${now.seq}): a request lands once; make it again`;
  return null;
}
