/**
 * Records the histories that the replay test guards: real runs on a real dev server against the
 * scripted model (`loopWorkflowV2` since clients start it; the files recorded before it are
 * `loopWorkflow` runs, kept because they guard runs that older code started). Run it after a deliberate change to the workflow's
 * commands (with `patched()` for runs in flight), then commit test/replay/histories/*.json:
 *   npm run record-histories                  (the ones not recorded yet)
 *   npm run record-histories -- replay-pass   (record these again)
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { trustPathsFromEnv } from '../activities/trust';
import { generateSigningKey } from '../client/signing';
import { DECISION_NAMESPACE } from '../common/sshsig';
import { must } from '../common/must';
import { createModelClient } from '../activities/providers';
import { harnessStoreId } from '../harness/store';
import { improveInput, regressionFromRun, waitImprovement } from '../client/improve';
import { LoopwrightClient } from '../client/loopwright-client';
import { getLoop } from '../loops';
import demoScript from '../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../loops/fixtures/sample-repo';
import { startModelServer } from '../model-server/server';
import { parseModelScript } from '../model-server/script';
import { freePort, startDevServer } from '../server/dev-server';
import { packageRoot } from '../server/paths';
import { installRuntime } from '../workers/runtime';
import { WORKER_TUNING } from '../workers/create-worker';
import { workflowSource } from '../workers/workflow-bundle';
import { workerDataConverter } from '../crypto/codec';
import { redactionFromEnv } from '../common/redact';
import { improveWorkflow } from '../workflows/improve/improve-workflow';

const verdict = (passed: boolean, item = 'mentions a crash') => ({
  content: [
    {
      type: 'tool_use',
      name: 'submit_verdict',
      input: {
        passed,
        reason: passed ? 'ok' : `misses: ${item}`,
        failed_items: passed ? [] : [item],
        required_correction: passed ? '' : `Fix: ${item}.`,
      },
    },
  ],
});
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });

const SCRIPT = parseModelScript(
  {
    rules: [
      {
        name: 'feedback-w1',
        match: { workflowId: 'replay-feedback', role: 'worker', attempt: 1 },
        reply: text('first'),
      },
      {
        name: 'feedback-c1',
        match: { workflowId: 'replay-feedback', role: 'checker', attempt: 1 },
        reply: verdict(false),
      },
      {
        name: 'feedback-w2',
        match: { workflowId: 'replay-feedback', role: 'worker', attempt: 2 },
        reply: text('a crash, fixed'),
      },
      {
        name: 'feedback-c2',
        match: { workflowId: 'replay-feedback', role: 'checker', attempt: 2 },
        reply: verdict(true),
      },
      {
        name: 'escalate-w1',
        match: { workflowId: 'replay-escalate', role: 'worker', attempt: 1 },
        reply: text('first'),
      },
      {
        name: 'escalate-c1',
        match: { workflowId: 'replay-escalate', role: 'checker', attempt: 1 },
        reply: verdict(false),
      },
      {
        name: 'escalate-w2',
        match: { workflowId: 'replay-escalate', role: 'worker', attempt: 2 },
        reply: text('after guidance: a crash'),
      },
      {
        name: 'escalate-c2',
        match: { workflowId: 'replay-escalate', role: 'checker', attempt: 2 },
        reply: verdict(true),
      },
      { name: 'approve-w1', match: { workflowId: 'replay-approve', role: 'worker', attempt: 1 }, reply: text('first') },
      { name: 'lean-w1', match: { workflowId: 'replay-lean', role: 'worker', attempt: 1 }, reply: text('first') },
      { name: 'v2-w', match: { workflowId: 'replay-v2', role: 'worker' }, reply: text('no crash yet') },
      { name: 'parked-w', match: { workflowId: 'replay-parked', role: 'worker' }, reply: text('a draft') },
      { name: 'v2-c', match: { workflowId: 'replay-v2', role: 'checker' }, reply: verdict(false) },
      { name: 'lean-c1', match: { workflowId: 'replay-lean', role: 'checker', attempt: 1 }, reply: verdict(false) },
      {
        name: 'approve-c1',
        match: { workflowId: 'replay-approve', role: 'checker', attempt: 1 },
        reply: verdict(false),
      },
      {
        name: 'agent-t1',
        match: { workflowId: 'replay-agent', role: 'worker', turn: 1 },
        reply: {
          content: [
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'notes.txt' } },
            { type: 'tool_use', id: 'toolu_2', name: 'list_files', input: { path: '.' } },
          ],
        },
      },
      {
        name: 'agent-t2',
        match: { workflowId: 'replay-agent', role: 'worker', turn: 2 },
        reply: {
          content: [{ type: 'tool_use', id: 'toolu_3', name: 'write_file', input: { path: 'x.txt', content: 'x' } }],
        },
      },
      {
        name: 'agent-t3',
        match: { workflowId: 'replay-agent', role: 'worker', turn: 3 },
        reply: text('a crash at 3am (notes.txt:1)'),
      },
      { name: 'pass-w1', match: { workflowId: 'replay-pass', role: 'worker' }, reply: text('a crash at dawn') },
      { name: 'pass-c1', match: { workflowId: 'replay-pass', role: 'checker' }, reply: verdict(true) },
      { name: 'budget-w1', match: { workflowId: 'replay-budget', role: 'worker' }, reply: text('no crash here') },
      { name: 'budget-c1', match: { workflowId: 'replay-budget', role: 'checker' }, reply: verdict(false) },
      // The improvement: sources fail until the prompt asks for a crash; the proposer asks for one.
      {
        name: 'improve-w-fixed',
        match: { workflowId: 'replay-improve', role: 'worker', system: 'Always mention a crash.' },
        reply: text('a crash at night'),
      },
      { name: 'improve-w', match: { workflowId: 'replay-improve', role: 'worker' }, reply: text('a quiet night') },
      {
        name: 'improve-c-pass',
        match: { workflowId: 'replay-improve', role: 'checker', lastUser: 'a crash at night' },
        reply: verdict(true),
      },
      { name: 'improve-c-fail', match: { workflowId: 'replay-improve', role: 'checker' }, reply: verdict(false) },
      {
        name: 'improve-proposer',
        match: { workflowId: 'replay-improve', role: 'proposer' },
        reply: {
          content: [
            {
              type: 'tool_use',
              name: 'submit_proposal',
              input: {
                changes: [
                  {
                    path: 'systemPrompt',
                    value: `${getLoop('evaluate-optimize').harness.systemPrompt}\nAlways mention a crash.`,
                  },
                ],
                contract: {
                  failingRuns: [],
                  occurrences: 3,
                  rootCause: 'the prompt never asks for a crash',
                  expectedImprovement: 'answers mention a crash',
                  rollback: 'loopwright harness rollback evaluate-optimize',
                },
              },
            },
          ],
        },
      },
      { name: 'agent-c1', match: { workflowId: 'replay-agent', role: 'checker' }, reply: verdict(true) },
      { name: 'sandbox-w1', match: { workflowId: 'replay-sandbox', role: 'worker' }, reply: text('42') },
    ],
  },
  'record-histories',
);

type Recorder = (client: LoopwrightClient) => Promise<void>;

const input = { task: 'Write a haiku about crashes.', rubric: ['mentions a crash'] };

/** One real run per recorded history, by workflow id. */
const RECORDERS: Record<string, Recorder> = {
  'replay-feedback': async (client) => {
    await client.run('evaluate-optimize', { ...input, maxAttempts: 2 }, { id: 'replay-feedback' });
    await client.wait('replay-feedback');
  },
  'replay-escalate': async (client) => {
    await client.run('evaluate-optimize', { ...input, maxAttempts: 1 }, { id: 'replay-escalate' });
    await client.wait('replay-escalate');
    await client.decide('replay-escalate', { kind: 'retry', by: 'ada', guidance: 'Name the crash.', attempts: 1 });
    await client.wait('replay-escalate');
  },
  'replay-approve': async (client) => {
    await client.run('evaluate-optimize', { ...input, maxAttempts: 1 }, { id: 'replay-approve' });
    await client.wait('replay-approve');
    await client.decide('replay-approve', { kind: 'approve', by: 'ada', note: 'override' });
    await client.wait('replay-approve');
  },
  /** As replay-approve, on the code since the patch lean-start: trust read by a local activity, identity and state in one upsert. */
  'replay-lean': async (client) => {
    await client.run('evaluate-optimize', { ...input, maxAttempts: 1 }, { id: 'replay-lean' });
    await client.wait('replay-lean');
    await client.decide('replay-lean', { kind: 'approve', by: 'ada', note: 'override' });
    await client.wait('replay-lean');
  },
  /** loopWorkflowV2 (what clients start since): two failed attempts, the budget spent, an approval; no patch markers. */
  'replay-v2': async (client) => {
    await client.run('evaluate-optimize', { ...input, maxAttempts: 2 }, { id: 'replay-v2' });
    await client.wait('replay-v2');
    await client.decide('replay-v2', { kind: 'approve', by: 'ada', note: 'override' });
    await client.wait('replay-v2');
  },
  /**
   * loopWorkflowV2 whose only check is a person's, approved: it moves through two states in one
   * workflow task twice (verifying and awaiting_human; applying and completed), one upsert each.
   */
  'replay-parked': async (client) => {
    const id = 'replay-parked';
    await client.run(
      'evaluate-optimize',
      { task: 'Write a draft.', checks: [{ kind: 'human', name: 'editor' }] },
      { id },
    );
    await client.wait(id);
    await client.decide(id, { kind: 'approve', by: 'ada', note: 'good' });
    await client.temporal.workflow.getHandle(id).result();
  },
  'replay-agent': async (client) => {
    const workspace = mkdtempSync(path.join(tmpdir(), 'loopwright-record-ws-'));
    writeFileSync(path.join(workspace, 'notes.txt'), 'the crash happened at 3am\n');
    await client.run(
      'evaluate-optimize',
      { ...input, tools: ['read_file', 'list_files', 'write_file'], workspace, autonomy: 'L1' },
      { id: 'replay-agent' },
    );
    await client.wait('replay-agent');
  },
  /** Passes at once and writes its trace report as it ends (delivery.trace). */
  'replay-pass': async (client) => {
    await client.run(
      'evaluate-optimize',
      { ...input, traceDir: mkdtempSync(path.join(tmpdir(), 'loopwright-record-traces-')) },
      { id: 'replay-pass' },
    );
    await client.temporal.workflow.getHandle('replay-pass').result();
  },
  /** Spends its only attempt, waits for a human who never comes, and stops budget_exhausted. */
  'replay-budget': async (client) => {
    await client.run(
      'evaluate-optimize',
      { ...input, maxAttempts: 1, escalationTimeout: '2s' },
      { id: 'replay-budget' },
    );
    await client.temporal.workflow.getHandle('replay-budget').result();
  },
  /** A command check and no agent tools: the sandbox preflight (patch sandbox-preflight), then the check in bubblewrap. */
  'replay-sandbox': async (client) => {
    const workspace = mkdtempSync(path.join(tmpdir(), 'loopwright-record-ws-'));
    const check = { kind: 'command', name: 'answer', command: 'test "$(cat "$LOOPWRIGHT_CANDIDATE_FILE")" = 42' };
    await client.run(
      'evaluate-optimize',
      { task: 'Answer with the number 42.', workspace, checks: [check] },
      { id: 'replay-sandbox' },
    );
    await client.temporal.workflow.getHandle('replay-sandbox').result();
  },
  /** The L2 fix-test demo: a cheating attempt refused by the change policy, a real fix, approval by ada, one git commit. */
  'replay-effect': async (client) => void (await approvedDemo(client, 'replay-effect')),
  /** The fix-test demo under the gate: the tests check on clean checkouts, the change policy, the code-review judge reading the diff; approved, one commit. */
  'replay-gate': async (client) => void (await approvedDemo(client, 'replay-gate')),
  /** The fix-test demo on a worker with allowed signers: the trust pinned at start (patch trust), the approval a signed `decide` update. */
  'replay-signed': async (client) => {
    const applied = await approvedDemo(client, 'replay-signed');
    if (!applied.verified) throw new Error('replay-signed: the approval was not verified');
  },
  /** Three failing runs, two of them regression tasks, an improvement that is approved, and the harness store it published to. */
  'replay-improve': async (client) => improvement(client, 'replay-improve'),
  /** The same improvement (not approved); what is recorded is its first evaluation run (see RECORD_RUN): the check of its parent (patch evaluation-parent). */
  'replay-evaluation': async (client) => improvement(client, 'replay-improve-evaluation', false),
};

/** Three failing runs, two of them regression tasks, and improvement `workflowId` of their loop, approved by ada unless `approve` is false. */
async function improvement(client: LoopwrightClient, workflowId: string, approve = true): Promise<void> {
  const sources: string[] = [];
  for (const n of [1, 2, 3]) {
    const id = `${workflowId}-source-${n}`;
    await client.run('evaluate-optimize', { ...input, maxAttempts: 1, escalationTimeout: '1s' }, { id });
    await client.temporal.workflow.getHandle(id).result();
    sources.push(id);
  }
  for (const runId of sources.slice(0, 2))
    await regressionFromRun(client, { loop: 'evaluate-optimize', runId, expect: 'pass', by: 'ada' });
  const improve = improveInput(client, 'evaluate-optimize', { since: '1h', minOccurrences: '3', repeats: '2' }, {});
  await client.temporal.workflow.start(improveWorkflow, {
    taskQueue: client.config.taskQueue,
    workflowId,
    args: [improve],
  });
  await waitImprovement(client, workflowId);
  if (approve) {
    await client.decide(workflowId, { kind: 'approve', by: 'ada', note: 'better' });
    await client.temporal.workflow.getHandle(workflowId).result();
  } else await client.temporal.workflow.getHandle(workflowId).terminate('recorded');
}

/** Recorders whose file holds another run's history than the one their name says: the workflow id recorded. */
const RECORD_RUN: Record<string, string> = {
  'replay-evaluation': 'replay-improve-evaluation/eval/t1/candidate/1',
};

/** The fix-test demo on a fresh sample repository as run `id`, approved by ada once it waits; returns the applied approval. */
async function approvedDemo(client: LoopwrightClient, id: string) {
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'loopwright-record-repo-')), 'repo'));
  await client.run(
    'fix-test',
    { repo, testCommand: 'node --test', failingTest: SAMPLE_FAILING_TEST, allowedPaths: ['src/', 'test/'] },
    { id },
  );
  await client.wait(id);
  const applied = await client.decide(id, { kind: 'approve', by: 'ada', note: 'ship it' });
  await client.temporal.workflow.getHandle(id).result();
  return applied;
}

/** Histories recorded along with another: the harness store the improvement published to. */
const ALSO: Record<string, (client: LoopwrightClient) => string> = {
  'replay-improve': (client) => harnessStoreId(client.config.taskQueue, 'evaluate-optimize'),
};

const historyFile = (id: string) => path.join(packageRoot(), 'test', 'replay', 'histories', `${id}.json`);

/**
 * Records the histories named on the command line, or else every one not recorded yet: an old
 * history is kept, because it guards runs that older workflow code started.
 */
async function main(): Promise<void> {
  const named = process.argv.slice(2);
  const unknown = named.filter((id) => !RECORDERS[id]);
  if (unknown.length)
    throw new Error(`no recorder for ${unknown.join(', ')}: choose from ${Object.keys(RECORDERS).join(', ')}`);
  const ids = named.length ? named : Object.keys(RECORDERS).filter((id) => !existsSync(historyFile(id)));
  if (ids.length === 0) {
    console.log('every history is recorded; name the ones to record again');
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'loopwright-record-'));
  process.env.LOOPWRIGHT_TRANSCRIPTS = path.join(dir, 'transcripts');
  process.env.LOOPWRIGHT_WORKTREES = path.join(dir, 'worktrees');
  const server = await startDevServer({ dbFile: path.join(dir, 'db.sqlite'), port: await freePort(), headless: true });
  // The effect and gate runs speak to the demo's script; every other run to SCRIPT (its rules match by workflow id).
  const model = await startModelServer({ script: SCRIPT, port: 0 });
  const demoModel = await startModelServer({ script: parseModelScript(demoScript, 'fix-test demo'), port: 0 });
  try {
    installRuntime();
    const connection = await NativeConnection.connect({ address: server.address });
    // The demo queue's worker trusts one key (ada's), which its client signs decisions with.
    const ada = path.join(dir, 'ada_ed25519');
    writeFileSync(
      path.join(dir, 'allowed_signers'),
      `ada namespaces="${DECISION_NAMESPACE}" ${generateSigningKey(ada, 'ada').publicKey}\n`,
    );
    const signing = {
      LOOPWRIGHT_ALLOWED_SIGNERS: path.join(dir, 'allowed_signers'),
      LOOPWRIGHT_GRANTS: path.join(dir, 'grants'),
      LOOPWRIGHT_SIGNING_KEY: ada,
    };
    for (const [queue, url] of [
      ['record', model.url],
      ['record-demo', demoModel.url],
    ] as const) {
      const env = {
        ANTHROPIC_BASE_URL: url,
        ANTHROPIC_API_KEY: 'record',
        ...(queue === 'record-demo' ? signing : { LOOPWRIGHT_ALLOWED_SIGNERS: '', LOOPWRIGHT_SIGNING_KEY: '' }),
      };
      const trust = () => trustPathsFromEnv(env);
      const worker = await Worker.create({
        connection,
        taskQueue: queue,
        activities: createActivities({ model: createModelClient(env), trust }),
        dataConverter: workerDataConverter(undefined, redactionFromEnv(env)),
        ...workflowSource(process.env),
        ...WORKER_TUNING,
      });
      // Recorded unencrypted, whatever the shell's LOOPWRIGHT_KEYS: the replay test reads them without keys.
      const client = await LoopwrightClient.connect({
        env: { ...env, TEMPORAL_ADDRESS: server.address, LOOPWRIGHT_TASK_QUEUE: queue, LOOPWRIGHT_KEYS: '' },
      });
      const demo = (id: string) => id === 'replay-effect' || id === 'replay-gate' || id === 'replay-signed';
      const mine = ids.filter((id) => demo(id) === (queue === 'record-demo'));
      await worker.runUntil(async () => {
        for (const id of mine) await must(RECORDERS[id], `ids are checked against RECORDERS above (${id})`)(client);
      });
      for (const id of mine.flatMap((m) => [m, ...(ALSO[m] ? [ALSO[m](client)] : [])])) {
        const history = await client.temporal.workflow.getHandle(RECORD_RUN[id] ?? id).fetchHistory();
        const file = historyFile(id.startsWith('harness/') ? 'replay-harness-store' : id);
        writeFileSync(file, historyToJSON(history));
        console.log(`recorded ${id} (${history.events?.length ?? 0} events) to ${path.relative(process.cwd(), file)}`);
      }
      await client.close();
    }
    await connection.close();
  } finally {
    await model.close();
    await demoModel.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
