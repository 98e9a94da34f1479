import { DECISION_NAMESPACE, parseAllowedSigners, verifySignature } from '../common/sshsig';
import {
  storeRequestMessage,
  type RegressionRequest,
  type RollbackRequest,
  type StoreOp,
} from '../common/improve/store-request';
import { readAllowedSigners, type TrustPaths } from './trust';

/** A request to a loop's harness store, as the store received it. */
export interface StoreRequestCheckInput {
  workflowId: string;
  op: StoreOp;
  request: RollbackRequest | RegressionRequest;
}

/**
 * `verified`: signed by a key the worker's allowed signers let sign decisions as `by`
 * (`fingerprint` is the key's); false: the worker has no allowed signers, so `by` is only claimed.
 */
export type StoreRequestCheck = { ok: true; verified: boolean; fingerprint?: string } | { ok: false; reason: string };

/**
 * Who a rollback or regression-add comes from, checked against the worker's allowed signers as
 * they are now (the store lives for months: nothing is pinned at its start). With allowed
 * signers, a request must be signed for the decisions namespace by a key they list for its `by`,
 * over {@link storeRequestMessage} with the store's stamp; anything else is refused with the
 * reason, one line. Without any, every request is accepted as unverified.
 */
export function checkStoreRequest(paths: () => TrustPaths, input: StoreRequestCheckInput): StoreRequestCheck {
  let allowed;
  try {
    allowed = readAllowedSigners(paths());
  } catch (err) {
    return { ok: false, reason: `the worker's allowed signers cannot be read now: ${(err as Error).message}` };
  }
  if (!allowed) return { ok: true, verified: false };
  const { request } = input;
  if (!request.signature)
    return {
      ok: false,
      reason: `it is not signed, and this worker verifies who decides (${allowed.path}): sign it with your key (LOOPWRIGHT_SIGNING_KEY or git's user.signingkey)`,
    };
  // Without the stamp a signed request could land again and again.
  if (request.seq === undefined || request.storeRun === undefined)
    return { ok: false, reason: 'the signed request does not name the state of the store it was made for' };
  const v = verifySignature({
    armored: request.signature,
    message: storeRequestMessage(input.workflowId, input.op, request),
    namespace: DECISION_NAMESPACE,
    principal: request.by,
    allowed: parseAllowedSigners(allowed.text),
    now: Date.now(),
  });
  return v.ok ? { ok: true, verified: true, fingerprint: v.fingerprint } : { ok: false, reason: v.reason };
}
