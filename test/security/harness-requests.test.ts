import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateSigningKey, signMessage } from '../../client/signing';
import {
  storeRequestMessage,
  type RegressionRequest,
  type RollbackRequest,
  type StoreOp,
} from '../../common/improve/store-request';
import { DECISION_NAMESPACE } from '../../common/sshsig';
import { addRegression, harnessState, harnessStoreId, publishHarness } from '../../harness/store';
import { getLoop } from '../../loops';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { addRegressionUpdate, rollbackHarnessUpdate } from '../../workflows/harness/harness-workflow';
import { runCli } from '../helpers/cli';
import { script, workerSays } from '../helpers/scripts';
import { clientEnv, testStack, type TestStack } from '../helpers/temporal';

/**
 * A rollback or a regression task changes what every later run of a loop gets, so the store
 * records who asked as a decision does: on a worker with allowed signers only a request signed
 * by a key they list for its `by` lands (verified, with the key's fingerprint), once, on the
 * store and for the operation it was signed for. Through the real CLI (dist/) and raw updates
 * to a real store on the dev server.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-store-requests-'));
const key = (name: string) => path.join(dir, name);
const alice = generateSigningKey(key('alice'), 'alice');
generateSigningKey(key('mallory'), 'mallory');
const allowedSigners = key('allowed_signers');
writeFileSync(allowedSigners, `alice namespaces="${DECISION_NAMESPACE}" ${alice.publicKey}\n`);

const LOOP = 'evaluate-optimize';
const OTHER = 'fix-test';
let model: ModelServer;
let trusted: TestStack;
let open: TestStack;
let workers: Array<Promise<void>>;
beforeAll(async () => {
  model = await startModelServer({ script: script(workerSays(1, 'x', { times: undefined })), port: 0 });
  // The publish check (an approved improvement) is tested elsewhere: these workers publish anything.
  const publishes = (a: Parameters<NonNullable<Parameters<typeof testStack>[3]>>[0]) => ({
    ...a,
    publishRefusal: async () => null,
  });
  trusted = await testStack('store-signed', model.url, { LOOPWRIGHT_ALLOWED_SIGNERS: allowedSigners }, publishes);
  open = await testStack('store-open', model.url, {}, publishes);
  workers = [trusted.worker.run(), open.worker.run()];
  for (const s of [trusted, open]) await publish(s);
});
afterAll(async () => {
  for (const s of [trusted, open]) s?.worker.shutdown();
  await Promise.all(workers ?? []);
  await trusted?.close();
  await open?.close();
  await model?.close();
});

/** Makes v2 current in `s`'s store of LOOP, so there is something to roll back. */
async function publish(s: TestStack): Promise<void> {
  const harness = { ...getLoop(LOOP).harness, systemPrompt: 'v2' };
  await publishHarness(s.client.temporal, s.taskQueue, { loop: LOOP, harness, by: 'alice', reason: 'v2' });
}

const cli = (s: TestStack, signingKey: string, ...args: string[]) =>
  runCli(args, {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...clientEnv({ LOOPWRIGHT_TASK_QUEUE: s.taskQueue, LOOPWRIGHT_SIGNING_KEY: signingKey }),
  });
const state = (loop = LOOP, s = trusted) => harnessState(s.client.temporal, loop, s.taskQueue);
const storeId = (loop: string) => harnessStoreId(trusted.taskQueue, loop);
/** The stamp of the trusted store of `loop` now (what the CLI puts in a request). */
const stamp = async (loop = LOOP) => {
  const { storeRun, seq } = await state(loop);
  return { storeRun, seq };
};
/** `request` signed by `signer` as if for the store `workflowId` and operation `op`. */
function signed<R extends RollbackRequest | RegressionRequest>(
  signer: string,
  workflowId: string,
  op: StoreOp,
  request: R,
): R {
  return {
    ...request,
    signature: signMessage(key(signer), DECISION_NAMESPACE, storeRequestMessage(workflowId, op, request)),
  };
}
const handle = (loop = LOOP) => trusted.client.temporal.workflow.getHandle(storeId(loop));
const rollback = (request: RollbackRequest, loop = LOOP) =>
  handle(loop).executeUpdate(rollbackHarnessUpdate, { args: [request] });
const addTask = (request: RegressionRequest, loop = LOOP) =>
  handle(loop).executeUpdate(addRegressionUpdate, { args: [request] });
const refusedWith = (pattern: RegExp) => ({
  cause: expect.objectContaining({ message: expect.stringMatching(pattern) }),
});

test('an unsigned rollback claiming an allowed signer, or one signed by a key not allowed for its name, is refused and the current version stays', async () => {
  const before = await state();
  expect(before.current).toBe(2);
  const unsigned = await cli(trusted, '', 'harness', 'rollback', LOOP, '--by', 'alice');
  expect({ code: unsigned.code, stderr: unsigned.stderr.trim() }).toEqual({
    code: 2,
    stderr: expect.stringMatching(/^error: rollback refused: it is not signed, and this worker verifies who decides/),
  });
  const mallory = await cli(trusted, key('mallory'), 'harness', 'rollback', LOOP, '--by', 'alice');
  expect({ code: mallory.code, stderr: mallory.stderr.trim() }).toEqual({
    code: 2,
    stderr: expect.stringMatching(/^error: rollback refused: key SHA256:\S+ is not in the worker's allowed signers$/),
  });
  const otherName = await cli(trusted, key('alice'), 'harness', 'rollback', LOOP, '--by', 'bob');
  expect({ code: otherName.code, stderr: otherName.stderr.trim() }).toEqual({
    code: 2,
    stderr: expect.stringMatching(/^error: rollback refused: key SHA256:\S+ may not sign as "bob"/),
  });
  const after = await state();
  expect({ current: after.current, moves: after.moves }).toEqual({ current: 2, moves: before.moves });
});

test("a signature made for another loop's store, for another operation or for another state of the store is refused", async () => {
  await state(OTHER); // the other loop's store exists
  const request = { by: 'alice', reason: 'x', to: 1, ...(await stamp()) };
  await expect(rollback(signed('alice', storeId(OTHER), 'rollback', request))).rejects.toMatchObject(
    refusedWith(/^rollback refused: the signature by key \S+ does not match/),
  );
  await expect(rollback(signed('alice', storeId(LOOP), 'addRegression', request))).rejects.toMatchObject(
    refusedWith(/^rollback refused: the signature by key \S+ does not match/),
  );
  // Alice's real request for the other store, sent to this one.
  const forOther = signed('alice', storeId(OTHER), 'rollback', {
    by: 'alice',
    reason: 'x',
    to: 1,
    ...(await stamp(OTHER)),
  });
  await expect(rollback(forOther)).rejects.toMatchObject(
    refusedWith(/made for another harness store of evaluate-optimize/),
  );
  // A request signed without the store's state could land again and again.
  await expect(
    rollback(signed('alice', storeId(LOOP), 'rollback', { by: 'alice', reason: 'x', to: 1 })),
  ).rejects.toMatchObject(refusedWith(/^rollback refused: the signed request does not name the state of the store/));
  expect((await state()).current).toBe(2);
});

test('a rollback signed by an allowed key lands, is recorded verified with the key, and the same request sent again is refused', async () => {
  const request = signed('alice', storeId(LOOP), 'rollback', { by: 'alice', reason: 'too chatty', ...(await stamp()) });
  await expect(rollback(request)).resolves.toBe(1);
  const after = await state();
  expect(after.current).toBe(1);
  expect(after.moves.at(-1)).toMatchObject({
    kind: 'rollback',
    from: 2,
    to: 1,
    by: 'alice',
    verified: true,
    fingerprint: alice.fingerprint,
  });
  const list = await cli(trusted, '', 'harness', 'list', LOOP);
  expect(list.stdout).toContain(
    `v2 → v1  ${after.moves.at(-1)!.at}  by alice (verified, key ${alice.fingerprint})  too chatty`,
  );
  // Sent again (captured from the first), it would move the pointer back a second time.
  await expect(rollback(request)).rejects.toMatchObject(refusedWith(/has changed since the request was made/));
  // Through the CLI, signed with alice's key: back to v2, verified.
  const cliRollback = await cli(trusted, key('alice'), 'harness', 'rollback', LOOP, '--by', 'alice', '--to', '2');
  expect(cliRollback).toMatchObject({ code: 0, stdout: `${LOOP}: harness v2 is current\n` });
  expect((await state()).moves.at(-1)).toMatchObject({ to: 2, verified: true, fingerprint: alice.fingerprint });
});

test('regression add: unsigned, signed by a stranger, for another store or operation, or sent twice is refused; signed by an allowed key it lands verified', async () => {
  const task = (fromRun: string) => ({ input: { task: 'x' }, expect: 'pass' as const, fromRun, by: 'alice' });
  const before = (await state()).regression;
  await expect(addTask({ ...task('r1'), ...(await stamp()) })).rejects.toMatchObject(
    refusedWith(/^addRegression refused: it is not signed/),
  );
  await expect(
    addTask(signed('mallory', storeId(LOOP), 'addRegression', { ...task('r1'), ...(await stamp()) })),
  ).rejects.toMatchObject(refusedWith(/is not in the worker's allowed signers/));
  await expect(
    addTask(signed('alice', storeId(OTHER), 'addRegression', { ...task('r1'), ...(await stamp()) })),
  ).rejects.toMatchObject(refusedWith(/does not match/));
  await expect(
    addTask(signed('alice', storeId(LOOP), 'rollback', { ...task('r1'), ...(await stamp()) })),
  ).rejects.toMatchObject(refusedWith(/does not match/));
  // The signature covers the task's input: another input under alice's signature is refused.
  const good = signed('alice', storeId(LOOP), 'addRegression', { ...task('r1'), ...(await stamp()) });
  await expect(addTask({ ...good, input: { task: 'ignore the tests' } })).rejects.toMatchObject(
    refusedWith(/does not match/),
  );
  expect((await state()).regression).toEqual(before);

  const id = await addTask(good);
  expect((await state()).regression.at(-1)).toMatchObject({
    id,
    fromRun: 'r1',
    by: 'alice',
    verified: true,
    fingerprint: alice.fingerprint,
  });
  await expect(addTask(good)).rejects.toMatchObject(
    refusedWith(/has changed since the request was made|already regression task/),
  );
  // The client's own path, signed as the CLI signs.
  const viaClient = await addRegression(
    trusted.client.temporal,
    trusted.taskQueue,
    { loop: LOOP, ...task('r2') },
    (message) => signMessage(key('alice'), DECISION_NAMESPACE, message),
  );
  const list = await cli(trusted, '', 'regression', 'list', LOOP);
  expect(list.stdout).toContain(`${viaClient}  expect pass  from r2  by alice (verified, key ${alice.fingerprint})`);
  expect((await state()).regression.map((t) => t.fromRun)).toEqual([...before.map((t) => t.fromRun), 'r1', 'r2']);
});

test('a worker without allowed signers records an unsigned rollback and regression task as unverified, and says so', async () => {
  const rolled = await cli(open, '', 'harness', 'rollback', LOOP, '--by', 'carol', '--reason', 'nope');
  expect(rolled).toMatchObject({ code: 0, stdout: `${LOOP}: harness v1 is current\n` });
  await addRegression(open.client.temporal, open.taskQueue, {
    loop: LOOP,
    input: {},
    expect: 'fail',
    fromRun: 'r9',
    by: 'carol',
  });
  const s = await state(LOOP, open);
  expect(s.moves.at(-1)).toMatchObject({ by: 'carol', verified: false });
  expect(s.moves.at(-1)).not.toHaveProperty('fingerprint');
  expect(s.regression.at(-1)).toMatchObject({ by: 'carol', verified: false });
  expect((await cli(open, '', 'harness', 'list', LOOP)).stdout).toMatch(/v2 → v1 .* by carol \(unverified\) {2}nope/);
  expect((await cli(open, '', 'regression', 'list', LOOP)).stdout).toMatch(/from r9 {2}by carol \(unverified\)/);
});
