import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { limitsIn } from '../../common/budget';
import type { LoopInput } from '../../common/loop-input';
import type { RunRecord } from '../../common/run-record';
import { DECISION_NAMESPACE } from '../../common/sshsig';
import type { Trust } from '../../common/trust';
import { generateSigningKey } from '../../client/signing';
import { loopWorkflow, loopWorkflowV2 } from '../../workflows';
import { newRecord } from '../../workflows/loop/record-keeping';
import { testStack, type TestStack } from '../helpers/temporal';

/**
 * A run trusts what its worker pinned, never what its caller sent: anyone who can start a
 * workflow (the CLI's connection is enough) can put anything in a run's input, so the state a
 * run hands itself when it continues as new, or the evaluation flag of an improvement's child
 * runs, must not be taken from a plain start. One stack for the file.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-forged-'));
const alice = generateSigningKey(path.join(dir, 'keys', 'alice'), 'alice');
const allowedSigners = path.join(dir, 'allowed_signers');
writeFileSync(allowedSigners, `alice namespaces="${DECISION_NAMESPACE}" ${alice.publicKey}\n`);

let model: ModelServer;
let stack: TestStack;
let worker: Promise<void>;
beforeAll(async () => {
  model = await startModelServer({ script: parseModelScript(demoScript, 'demo'), port: 0 });
  stack = await testStack('forged-input', model.url, {
    LOOPWRIGHT_ALLOWED_SIGNERS: allowedSigners,
    LOOPWRIGHT_GRANTS: path.join(dir, 'grants'),
  });
  worker = stack.worker.run();
});
afterAll(async () => {
  stack?.worker.shutdown();
  await worker;
  await stack?.close();
  await model?.close();
});

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo }).toString();
const commitsOn = (repo: string) => git(repo, 'rev-list', '--count', 'main').trim();

/** What an attacker would claim: no allowed signers, nothing to sign, L3 granted. */
const forgedTrust: Trust = {
  allowedSigners: null,
  signedDecisions: 'none',
  autonomy: { granted: true, level: 'L3', via: 'grant', by: 'alice', fingerprint: 'SHA256:x', at: 'now', file: 'x' },
};

/** A fix-test run at L3, planned as the client plans it (the worker has no grant for L3). */
function l3Plan(repo: string): LoopInput {
  return stack.client.plan(
    'fix-test',
    {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
      autonomy: 'L3',
    },
    { kind: 'client' },
  );
}

async function startRaw(type: typeof loopWorkflowV2, workflowId: string, input: LoopInput): Promise<RunRecord> {
  const handle = await stack.client.temporal.workflow.start(type, {
    taskQueue: stack.taskQueue,
    workflowId,
    args: [input],
  });
  return (await handle.result()) as RunRecord;
}

test.each([
  ['loopWorkflowV2', loopWorkflowV2],
  ['loopWorkflow', loopWorkflow],
])(
  '%s: a plain start carrying resume state (a forged L3 grant, no allowed signers) is refused before anything runs',
  async (name, type) => {
    const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-forged-repo-')), 'repo'));
    const before = commitsOn(repo);
    const plan = l3Plan(repo);
    const workflowId = `forged/resume-${name}`;
    const record = newRecord(workflowId, plan, new Date().toISOString());
    const resume = {
      record,
      feedback: [],
      limits: limitsIn(record.budget),
      activeMs: 0,
      session: { root: repo, branch: 'main', base: git(repo, 'rev-parse', 'HEAD').trim(), tools: [] },
      trust: forgedTrust,
    };
    const done = await startRaw(type, workflowId, { ...plan, resume });
    expect(done).toMatchObject({ state: 'blocked', stopReason: 'setup_error', attempts: [], effects: [] });
    expect(done.error).toMatch(/input carries resume state, which only the run itself sets/);
    // Nothing of the forged trust was taken, and nothing was committed.
    expect(done.trust).toBeUndefined();
    expect(commitsOn(repo)).toBe(before);
  },
);

test('a plain start that claims to be an evaluation (no trust pinned, no grant asked) is refused', async () => {
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-forged-repo-')), 'repo'));
  const plan = l3Plan(repo);
  const done = await startRaw(loopWorkflowV2, 'forged/evaluation', { ...plan, evaluation: true });
  expect(done).toMatchObject({ state: 'blocked', stopReason: 'setup_error', attempts: [] });
  expect(done.error).toMatch(/says it is an evaluation, which only an improvement's child runs are/);
  expect(done).not.toHaveProperty('evaluation');

  // The same run without the claim is checked as any L3 run is: no grant on this worker.
  const plain = await startRaw(loopWorkflowV2, 'forged/plain', plan);
  expect(plain).toMatchObject({ state: 'blocked', stopReason: 'not_granted', attempts: [] });
  expect(plain.trust).toMatchObject({ autonomy: { granted: false } });
});
