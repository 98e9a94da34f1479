import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkStoreRequest } from '../../activities/store-request';
import type { TrustPaths } from '../../activities/trust';
import { generateSigningKey, signMessage } from '../../client/signing';
import { decisionMessage } from '../../common/decision';
import {
  stampProblem,
  storeRequestMessage,
  type RollbackRequest,
  type StoreOp,
} from '../../common/improve/store-request';
import { DECISION_NAMESPACE, GRANT_NAMESPACE } from '../../common/sshsig';

/** The worker's check of who sent a harness store's rollback or regression task, without Temporal. */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-store-check-'));
const alice = generateSigningKey(path.join(dir, 'alice'), 'alice');
const allowed = path.join(dir, 'allowed_signers');
writeFileSync(allowed, `alice namespaces="${DECISION_NAMESPACE}" ${alice.publicKey}\n`);
const trusting =
  (file: string | null, explicit = true) =>
  (): TrustPaths => ({
    allowedSigners: file,
    explicit,
    grantsDir: dir,
  });
const ID = 'harness/q/fix-test';
const request: RollbackRequest = { by: 'alice', reason: 'x', to: 1, storeRun: 'r1', seq: 3 };
const sign = (message: string, namespace = DECISION_NAMESPACE) =>
  signMessage(path.join(dir, 'alice'), namespace, message);
const check = (r: RollbackRequest, op: StoreOp = 'rollback', paths = trusting(allowed)) =>
  checkStoreRequest(paths, { workflowId: ID, op, request: r });

test('a request signed by an allowed key for this store, operation and fields is verified with the key', () => {
  const signature = sign(storeRequestMessage(ID, 'rollback', request));
  expect(check({ ...request, signature })).toEqual({ ok: true, verified: true, fingerprint: alice.fingerprint });
});

test.each([
  ['another store', () => sign(storeRequestMessage('harness/q/other', 'rollback', request))],
  ['another operation', () => sign(storeRequestMessage(ID, 'addRegression', request))],
  ['another target', () => sign(storeRequestMessage(ID, 'rollback', { ...request, to: 2 }))],
  ['another state of the store', () => sign(storeRequestMessage(ID, 'rollback', { ...request, seq: 2 }))],
  ['a decision', () => sign(decisionMessage(ID, { kind: 'approve', by: 'alice', id: 'd1' } as never))],
])('a signature made for %s is refused', (_what, signature) => {
  expect(check({ ...request, signature: signature() })).toEqual({
    ok: false,
    reason: expect.stringMatching(/^the signature by key \S+ does not match/),
  });
});

test('a signature for the grants namespace, or by a key not listed for the name, is refused', () => {
  const message = storeRequestMessage(ID, 'rollback', request);
  expect(check({ ...request, signature: sign(message, GRANT_NAMESPACE) })).toMatchObject({
    ok: false,
    reason: expect.stringContaining('namespace "loopwright-grant"'),
  });
  const bob = { ...request, by: 'bob' };
  expect(check({ ...bob, signature: sign(storeRequestMessage(ID, 'rollback', bob)) })).toMatchObject({
    ok: false,
    reason: expect.stringContaining('may not sign as "bob"'),
  });
});

test('unsigned, or signed without the store state, is refused where the worker has allowed signers; accepted unverified where it has none', () => {
  expect(check(request)).toMatchObject({ ok: false, reason: expect.stringMatching(/^it is not signed/) });
  const { storeRun: _r, seq: _s, ...unstamped } = request;
  expect(check({ ...unstamped, signature: sign(storeRequestMessage(ID, 'rollback', unstamped)) })).toMatchObject({
    ok: false,
    reason: expect.stringContaining('does not name the state of the store'),
  });
  expect(check(request, 'rollback', trusting(null, false))).toEqual({ ok: true, verified: false });
  expect(check(request, 'rollback', trusting(path.join(dir, 'missing')))).toMatchObject({
    ok: false,
    reason: expect.stringContaining("the worker's allowed signers cannot be read now"),
  });
});

test('a stamp must name this store and its state now; a request without one is left to the signature check', () => {
  const now = { storeRun: 'r1', seq: 3, loop: 'fix-test' };
  expect(stampProblem({ storeRun: 'r1', seq: 3 }, now)).toBeNull();
  expect(stampProblem({}, now)).toBeNull();
  expect(stampProblem({ storeRun: 'r0', seq: 3 }, now)).toMatch(/another harness store of fix-test/);
  expect(stampProblem({ storeRun: 'r1', seq: 2 }, now)).toMatch(
    /has changed since the request was made \(it was at change 2, it is at 3\)/,
  );
});
