import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { decisionMessage, decisionWait, type DecisionInput } from '../../common/decision';
import { DecisionSchema } from '../../common/decision-schema';
import { DecisionRefusedError, NotGrantedError } from '../../common/errors';
import type { RunRecord } from '../../common/run-record';
import { DECISION_NAMESPACE, GRANT_NAMESPACE } from '../../common/sshsig';
import { l3Grant, writeSignedGrant } from '../helpers/trust';
import { LoopwrightClient } from '../../client/loopwright-client';
import { summarize } from '../../client/output';
import { grantCommand } from '../../client/commands/grant';
import { generateSigningKey, signMessage } from '../../client/signing';
import { decisionSignal, decisionUpdate } from '../../workflows/messages';
import { script, workerSays } from '../helpers/scripts';
import { clientEnv, testStack, type TestStack } from '../helpers/temporal';

/**
 * Trusted decisions, as an attacker would try them, on the real dev server and a real worker:
 * who approved is verified against the worker's allowed signers (SSH signatures over the
 * decision and the run's id), approvers are enforced, refusals never reach history, no decision
 * can make a run's record too large, and L3 needs an operator's signed grant.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-trust-'));
const key = (name: string) => path.join(dir, 'keys', name);
const alice = generateSigningKey(key('alice'), 'alice');
const bob = generateSigningKey(key('bob'), 'bob');
generateSigningKey(key('mallory'), 'mallory');
const allowedSigners = path.join(dir, 'allowed_signers');
writeFileSync(
  allowedSigners,
  [
    `alice namespaces="${DECISION_NAMESPACE},${GRANT_NAMESPACE}" ${alice.publicKey}`,
    `bob namespaces="${DECISION_NAMESPACE}" ${bob.publicKey}`,
    '',
  ].join('\n'),
);
const grantsDir = path.join(dir, 'grants');
const trustEnv = {
  LOOPWRIGHT_ALLOWED_SIGNERS: allowedSigners,
  LOOPWRIGHT_GRANTS: grantsDir,
  LOOPWRIGHT_SIGNING_KEY: key('alice'),
};

let model: ModelServer | undefined;
let stack: TestStack | undefined;
const clients: LoopwrightClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await stack?.close();
  await model?.close();
  stack = model = undefined;
});

/** Another person's client on the stack's task queue, signing with `signingKey` ('' for none). */
async function clientAs(s: TestStack, signingKey: string): Promise<LoopwrightClient> {
  const c = await LoopwrightClient.connect({
    env: clientEnv({ LOOPWRIGHT_TASK_QUEUE: s.taskQueue, LOOPWRIGHT_SIGNING_KEY: signingKey }),
  });
  clients.push(c);
  return c;
}

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo }).toString();
const effectCommits = (repo: string) =>
  git(repo, 'log', 'main', '--format=%H', '--grep=Loopwright-Effect').trim().split('\n').filter(Boolean);
const fixInput = (repo: string, extra: Record<string, unknown> = {}) => ({
  repo,
  testCommand: 'node --test',
  failingTest: SAMPLE_FAILING_TEST,
  allowedPaths: ['src/', 'test/'],
  ...extra,
});
const reviewInput = (approvers: string[]) => ({
  task: 'Write.',
  checks: [{ kind: 'human', name: 'editor', approvers }],
});

/**
 * A decision signed by `signer` for run `workflowId` (its first Temporal run `runId`) at the wait
 * `record` shows (none: the run waits for nothing), as the CLI signs it.
 */
function signedFor(
  workflowId: string,
  runId: string,
  d: DecisionInput,
  signer: string,
  record: unknown = null,
): DecisionInput {
  const parsed = DecisionSchema.parse(d);
  const run = { firstRunId: runId, wait: decisionWait(record) };
  return {
    ...parsed,
    signature: signMessage(key(signer), DECISION_NAMESPACE, decisionMessage(workflowId, parsed, run)),
  };
}

async function until(s: TestStack, workflowId: string, done: (r: RunRecord) => boolean): Promise<RunRecord> {
  for (;;) {
    const r = await s.client.status(workflowId);
    if (done(r)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** The reason a raw update was refused with (the failure's cause). */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { cause?: Error }).cause?.message ?? (err as Error).message;
  }
  throw new Error('the update was not refused');
}

/** Event types of a run's history (to show what never reached it). */
async function historyEvents(s: TestStack, workflowId: string): Promise<string[]> {
  const history = await s.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map(
    (e) => Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? '?',
  );
}

test('an approval of effects must be signed by an allowed key for the name it claims; the signed one lands, recorded with the key', async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  stack = await testStack('signed-approval', model.url, trustEnv);
  const s = stack;
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-fix-')), 'repo'));
  const record = await s.run(async () => {
    const { workflowId, runId } = await s.client.run('fix-test', fixInput(repo));
    const waiting = await s.client.wait(workflowId);
    expect(waiting).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'approval' } });
    expect(waiting.trust).toMatchObject({
      signedDecisions: 'effects',
      allowedSigners: { path: allowedSigners, keys: 2 },
      autonomy: { granted: true, via: 'loop' },
    });
    expect(waiting.trust!.allowedSigners!.sha256).toMatch(/^[0-9a-f]{64}$/);

    // Anyone can claim to be alice: unsigned, the claim is refused.
    const unsigned = await clientAs(s, '');
    await expect(unsigned.decide(workflowId, { kind: 'approve', by: 'alice' })).rejects.toThrow(
      /an approval of effects must be signed/,
    );
    // Mallory's key is not in the worker's list.
    const mallory = await clientAs(s, key('mallory'));
    await expect(mallory.decide(workflowId, { kind: 'approve', by: 'alice' })).rejects.toThrow(
      /is not in the worker's allowed signers/,
    );
    // Bob's key is listed, for bob only.
    const bobs = await clientAs(s, key('bob'));
    await expect(bobs.decide(workflowId, { kind: 'approve', by: 'alice' })).rejects.toThrow(/may not sign as "alice"/);
    // Alice's real signature, altered (the note changed after signing): refused.
    const handle = s.client.temporal.workflow.getHandle(workflowId);
    const altered = {
      ...signedFor(workflowId, runId, { kind: 'approve', id: 'alter-1', by: 'alice', note: 'ok' }, 'alice', waiting),
      note: 'ok, and more',
    };
    expect(await refusal(handle.executeUpdate(decisionUpdate, { args: [altered as never] }))).toMatch(
      /bad signature: .*does not match this decision/,
    );
    expect(effectCommits(repo)).toEqual([]);

    const applied = await s.client.decide(workflowId, { kind: 'approve', by: 'alice' });
    expect(applied).toMatchObject({
      kind: 'approve',
      by: 'alice',
      status: 'applied',
      verified: true,
      fingerprint: alice.fingerprint,
    });
    expect(applied).not.toHaveProperty('signature');
    return until(s, workflowId, (r) => r.state === 'completed' || r.state === 'blocked');
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed' });
  expect(record.effects[0]).toMatchObject({ approvedBy: 'alice' });
  expect(effectCommits(repo)).toHaveLength(1);
  // Every refused decision was refused by the update's validator: none of them is in the record or the history.
  expect(record.decisions).toEqual([expect.objectContaining({ by: 'alice', status: 'applied', verified: true })]);
  const events = await historyEvents(s, record.workflowId);
  expect(events.filter((e) => e === 'workflowExecutionUpdateAcceptedEventAttributes')).toHaveLength(1);
  // status shows the verified principal with its key, and what the run trusted.
  const lines = summarize(record);
  expect(lines).toContainEqual(
    expect.stringMatching(/^ {2}decision {3}approve by alice \(verified, key SHA256:[A-Za-z0-9+/]{43}\)$/),
  );
  expect(lines).toContainEqual(
    expect.stringMatching(
      /^ {2}trust {6}decisions verified against .*allowed_signers \(sha256 [0-9a-f]{12}…, 2 keys\); L2 allowed by the loop's definition$/,
    ),
  );
});

test('where unsigned decisions are allowed they are recorded unverified; approvers are enforced; a signature for another run is refused', async () => {
  model = await startModelServer({ script: script(workerSays(1, 'draft', { times: undefined })), port: 0 });
  stack = await testStack('approvers', model.url, trustEnv);
  const s = stack;
  await s.run(async () => {
    const a = (await s.client.run('evaluate-optimize', reviewInput(['alice']))).workflowId;
    const { workflowId: b, runId: bRun } = await s.client.run('evaluate-optimize', reviewInput(['alice']));
    await s.client.wait(a);
    await s.client.wait(b);
    const unsigned = await clientAs(s, '');
    // A name that would forge a line in trace or list is refused before anything is sent.
    await expect(unsigned.decide(a, { kind: 'approve', by: 'alice\n  decision approve by root' })).rejects.toThrow(
      /invalid decision: .*a name may not contain control characters or line breaks/,
    );
    await expect(unsigned.decide(a, { kind: 'approve', by: 'mallory' })).rejects.toThrow(
      /mallory \(unverified\) may not make this decision: it is for alice/,
    );
    // Bob signs, verified as bob, but only alice may review.
    const bobs = await clientAs(s, key('bob'));
    await expect(bobs.decide(a, { kind: 'approve', by: 'bob' })).rejects.toThrow(
      /^bob may not make this decision: it is for alice|bob may not make this decision/,
    );
    // Alice's signature for run B's decision, replayed on run A (same decision, same id): refused.
    const forB = signedFor(
      b,
      bRun,
      { kind: 'approve', id: 'replay-1', by: 'alice' },
      'alice',
      await s.client.status(b),
    );
    const onA = s.client.temporal.workflow.getHandle(a);
    expect(await refusal(onA.executeUpdate(decisionUpdate, { args: [forB as never], updateId: 'replay-1' }))).toMatch(
      /does not match this decision/,
    );
    // The same signature on run B is good.
    expect(
      await s.client.temporal.workflow.getHandle(b).executeUpdate(decisionUpdate, { args: [forB as never] }),
    ).toMatchObject({ by: 'alice', verified: true });
    // Unsigned, alice's claimed name is taken for a review (signatures are required only for effects), marked unverified.
    const claimed = await unsigned.decide(a, { kind: 'approve', by: 'alice' });
    expect(claimed).toMatchObject({ by: 'alice', verified: false });
    const [ra, rb] = await Promise.all([
      until(s, a, (r) => r.state === 'completed'),
      until(s, b, (r) => r.state === 'completed'),
    ]);
    expect(ra.attempts[0]?.verdicts.find((v) => v.kind === 'human')).toMatchObject({
      passed: true,
      by: 'alice',
      reason: 'approved by alice (unverified)',
    });
    expect(rb.attempts[0]?.verdicts.find((v) => v.kind === 'human')).toMatchObject({ reason: 'approved by alice' });
    // Bob's signed refusal stays in the record (its id is spent); alice's claim is the one applied.
    expect(ra.decisions).toEqual([
      expect.objectContaining({ status: 'refused', by: 'bob', fingerprint: bob.fingerprint }),
      expect.objectContaining({ status: 'applied', verified: false, by: 'alice' }),
    ]);
    // The Web UI's current details say so too.
    await s.client.temporal.workflow.getHandle(a).result();
    const meta = await s.client.temporal.workflow
      .getHandle(a)
      .query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(meta.currentDetails).toContain('decision: approve by alice (unverified)');
    expect(rb.decisions).toEqual([expect.objectContaining({ verified: true, fingerprint: alice.fingerprint })]);
  });
});

test('a signed approval sent before the run waits is recorded as refused: its bytes, sent again at the wait, approve nothing', async () => {
  // The worker's first answer takes a while: the run is still running when alice's approval arrives.
  model = await startModelServer({ script: script(workerSays(1, 'draft', { delayMs: 2000 })), port: 0 });
  stack = await testStack('early-approval', model.url, trustEnv);
  const s = stack;
  await s.run(async () => {
    const { workflowId, runId } = await s.client.run('evaluate-optimize', reviewInput(['alice']));
    const handle = s.client.temporal.workflow.getHandle(workflowId);
    const early = signedFor(
      workflowId,
      runId,
      { kind: 'approve', id: 'early-1', by: 'alice', note: 'looks fine' },
      'alice',
    );
    expect(await refusal(handle.executeUpdate(decisionUpdate, { args: [early as never] }))).toMatch(
      /the run is running, not waiting for a decision/,
    );
    const waiting = await s.client.wait(workflowId);
    expect(waiting).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'review' } });
    expect(waiting.decisions).toEqual([
      expect.objectContaining({ status: 'refused', id: 'early-1', by: 'alice', fingerprint: alice.fingerprint }),
    ]);
    // Whoever saw those bytes (alice's terminal, a proxy) sends them again now that a candidate
    // alice never saw waits for her review: as an update and as a signal.
    expect(await refusal(handle.executeUpdate(decisionUpdate, { args: [early as never] }))).toMatch(
      /decision early-1 was already received/,
    );
    await handle.signal(decisionSignal, early as never);
    const still = await s.client.status(workflowId);
    expect(still).toMatchObject({ state: 'awaiting_human' });
    expect(still.decisions.filter((d) => d.status === 'applied')).toEqual([]);
    // Alice's own decision, made now, is taken.
    const alices = await clientAs(s, key('alice'));
    expect(await alices.decide(workflowId, { kind: 'approve', by: 'alice' })).toMatchObject({ verified: true });
    expect(await until(s, workflowId, (r) => r.state === 'completed')).toMatchObject({ state: 'completed' });
  });
});

test('signed decisions that reach a run before it has pinned its trust are judged once it has: refused and recorded, their bytes approve nothing later', async () => {
  model = await startModelServer({ script: script(workerSays(1, 'draft', { times: undefined })), port: 0 });
  stack = await testStack('before-trust', model.url, trustEnv);
  const s = stack;
  // No worker polls yet: the signal and the update are in the run's first activation, before the
  // local activity that pins its trust (no signature can be verified until then).
  const { workflowId, runId } = await s.client.run('evaluate-optimize', reviewInput(['alice']));
  const handle = s.client.temporal.workflow.getHandle(workflowId);
  const bySignal = signedFor(workflowId, runId, { kind: 'approve', id: 'early-signal', by: 'alice' }, 'alice');
  const byUpdate = signedFor(workflowId, runId, { kind: 'approve', id: 'early-update', by: 'alice' }, 'alice');
  await handle.signal(decisionSignal, bySignal as never);
  const updated = refusal(handle.executeUpdate(decisionUpdate, { args: [byUpdate as never] }));
  await s.run(async () => {
    expect(await updated).toMatch(/the run is running, not waiting for a decision/);
    const waiting = await s.client.wait(workflowId);
    expect(waiting).toMatchObject({ state: 'awaiting_human' });
    expect(waiting.decisions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 'refused', id: 'early-signal', fingerprint: alice.fingerprint }),
        expect.objectContaining({ status: 'refused', id: 'early-update', fingerprint: alice.fingerprint }),
      ]),
    );
    for (const again of [bySignal, byUpdate])
      expect(await refusal(handle.executeUpdate(decisionUpdate, { args: [again as never] }))).toMatch(
        /was already received/,
      );
    expect((await s.client.status(workflowId)).decisions.filter((d) => d.status === 'applied')).toEqual([]);
  });
});

test('a 300 KB malformed decision signal, and a flood of bad ones, leave the run healthy with a bounded record', async () => {
  model = await startModelServer({ script: script(workerSays(1, 'draft', { times: undefined })), port: 0 });
  stack = await testStack('flood', model.url, trustEnv);
  const s = stack;
  const record = await s.run(async () => {
    const { workflowId } = await s.client.run('evaluate-optimize', reviewInput([]));
    await s.client.wait(workflowId);
    const handle = s.client.temporal.workflow.getHandle(workflowId);
    const huge = { kind: 'approve', id: 'x'.repeat(1000), by: 'eve\nforged line', note: 'n'.repeat(300_000) };
    await handle.signal(decisionSignal, huge as never);
    for (let i = 0; i < 60; i++)
      await handle.signal(decisionSignal, { kind: 'nonsense', id: `bad-${i}`, by: 'eve' } as never);
    // The update path refuses the same decision before it reaches history.
    await expect(
      s.client.decide(workflowId, { kind: 'approve', by: 'eve', note: 'n'.repeat(300_000) }),
    ).rejects.toThrow(/at most 4000 characters|at most 16384/);
    expect(await refusal(handle.executeUpdate(decisionUpdate, { args: [huge as never] }))).toMatch(
      /bytes: at most 16384/,
    );
    const live = await s.client.status(workflowId);
    expect(live.state).toBe('awaiting_human');
    expect(live.decisions.length).toBeLessThanOrEqual(50);
    expect(JSON.stringify(live).length).toBeLessThan(60_000);
    expect(
      live.decisions.every(
        (d) => d.status === 'refused' && !('note' in d) && d.by.length <= 101 && !d.by.includes('\n'),
      ),
    ).toBe(true);
    // The decision that counts still works.
    await s.client.decide(workflowId, { kind: 'approve', by: 'alice' });
    return until(s, workflowId, (r) => r.state === 'completed');
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed', output: 'draft' });
  expect(JSON.stringify(record).length).toBeLessThan(60_000);
  const events = await historyEvents(s, record.workflowId);
  expect(events.filter((e) => e === 'workflowTaskFailedEventAttributes')).toEqual([]);
});

test("L3 needs an operator's signed grant on the worker: without one the run is refused at start with what is missing", async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  stack = await testStack('grant', model.url, trustEnv);
  const s = stack;
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-fix-')), 'repo'));
  await s.run(async () => {
    const refused = s.client.run('fix-test', fixInput(repo, { autonomy: 'L3' }), { id: 'fix-test/l3-no-grant' });
    await expect(refused).rejects.toThrow(NotGrantedError);
    await expect(refused).rejects.toThrow(/loop fix-test is not granted L3 .*loopwright grant fix-test --level L3/);
    const record = await s.client.status('fix-test/l3-no-grant');
    expect(record).toMatchObject({ state: 'blocked', stopReason: 'not_granted', attempts: [] });

    // A grant signed by bob (whose key may not sign grants) does not count; one by alice does.
    mkdirSync(grantsDir, { recursive: true });
    const grant = l3Grant('fix-test', 'bob');
    writeSignedGrant(path.join(grantsDir, 'bob.json'), grant, key('bob'));
    await expect(s.client.run('fix-test', fixInput(repo, { autonomy: 'L3' }))).rejects.toThrow(
      /bob.json: key .* may not sign as "bob" for loopwright-grant/,
    );
    writeSignedGrant(path.join(grantsDir, 'alice.json'), { ...grant, by: 'alice' }, key('alice'));
    const { workflowId } = await s.client.run('fix-test', fixInput(repo, { autonomy: 'L3' }));
    const done = await until(s, workflowId, (r) => r.state === 'completed' || r.state === 'blocked');
    expect(done).toMatchObject({
      state: 'completed',
      trust: { autonomy: { granted: true, via: 'grant', by: 'alice', fingerprint: alice.fingerprint } },
      audit: { needed: true },
    });

    // `loopwright grant` signs a grant only when the evidence (verified approvals only) meets the rule, and only with a key.
    const io = { out: () => undefined, err: () => undefined };
    const opts = { level: 'L3', by: 'alice', taskQueue: s.taskQueue, out: path.join(dir, 'granted.json') };
    await expect(
      grantCommand(s.client, 'fix-test', opts, io, { LOOPWRIGHT_SIGNING_KEY: key('alice') }),
    ).rejects.toThrow(/does not meet its rule for L3 yet \(50 consecutive L2 runs approved unchanged: streak 0\)/);
    await expect(grantCommand(s.client, 'fix-test', opts, io, { LOOPWRIGHT_SIGNING_KEY: '' })).rejects.toThrow(
      /grant needs your signing key/,
    );
    await expect(
      grantCommand(s.client, 'fix-test', { ...opts, level: 'L4' }, io, { LOOPWRIGHT_SIGNING_KEY: key('alice') }),
    ).rejects.toThrow(/--level must be L2 or L3/);
  });
});

// 200 here keeps the suite's time and its margin on a shared 2-core machine; `npm run bench:parked`
// measures 1,000 (decision-to-close percentiles and false errors) as a benchmark, not a timed test.
test('200 parked runs approved at once: every approve reports what the run did', async () => {
  const N = 200;
  model = await startModelServer({ script: script(workerSays(1, 'draft', { times: undefined })), port: 0 });
  stack = await testStack('many', model.url, trustEnv);
  const s = stack;
  await s.run(async () => {
    const ids: string[] = [];
    for (let i = 0; i < N; i += 50) {
      ids.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, N - i) }, (_, j) =>
            s.client.run('evaluate-optimize', reviewInput([]), { id: `many/${i + j}` }).then((r) => r.workflowId),
          ),
        )),
      );
    }
    // Parked: visibility counts them (one query, not one per run).
    const parked = `TaskQueue = '${s.taskQueue}' AND LoopState = 'awaiting_human' AND ExecutionStatus = 'Running'`;
    while ((await s.client.temporal.workflow.count(parked)).count < N) await new Promise((r) => setTimeout(r, 500));
    // Every run is approved at once; every tenth gets a second approval, which must be refused.
    const results = await Promise.allSettled(
      ids.flatMap((id, i) => [
        s.client.decide(id, { kind: 'approve', by: 'alice' }),
        ...(i % 10 === 0 ? [s.client.decide(id, { kind: 'approve', by: 'alice' })] : []),
      ]),
    );
    const applied = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(
      refused
        .filter((r) => !(r.reason instanceof DecisionRefusedError))
        .map((r) => String(r.reason))
        .slice(0, 3),
    ).toEqual([]);
    expect(applied).toHaveLength(N);
    expect(refused).toHaveLength(N / 10);
    // What each approve said is what its run recorded: exactly one applied decision per run.
    for (let i = 0; i < N; i += 50) {
      const records = await Promise.all(
        ids.slice(i, i + 50).map((id) => s.client.temporal.workflow.getHandle(id).result() as Promise<RunRecord>),
      );
      for (const r of records) {
        expect(r.state).toBe('completed');
        expect(r.decisions.filter((d) => d.status === 'applied')).toHaveLength(1);
      }
    }
  });
}, 600_000);
