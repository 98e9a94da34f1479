/**
 * Records the histories that the replay test guards: real runs of `loopWorkflow` on a real dev
 * server against the scripted model. Run it after a deliberate change to the workflow's
 * commands (with `patched()` for runs in flight), then commit test/replay/histories/*.json:
 *   npm run record-histories
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createActivities } from '../activities';
import { createAnthropic } from '../activities/model';
import { LoopwrightClient } from '../client/loopwright-client';
import { startModelServer } from '../model-server/server';
import { parseModelScript } from '../model-server/script';
import { freePort, startDevServer } from '../server/dev-server';
import { packageRoot } from '../server/paths';
import { installRuntime } from '../workers/runtime';
import { WORKER_TUNING } from '../workers/create-worker';
import { workflowSource } from '../workers/workflow-bundle';

const verdict = (passed: boolean, item = 'mentions a crash') => ({
  content: [{ type: 'tool_use', name: 'submit_verdict', input: { passed, reason: passed ? 'ok' : `misses: ${item}`, failed_items: passed ? [] : [item], required_correction: passed ? '' : `Fix: ${item}.` } }],
});
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });

const SCRIPT = parseModelScript(
  {
    rules: [
      { name: 'feedback-w1', match: { workflowId: 'replay-feedback', role: 'worker', attempt: 1 }, reply: text('first') },
      { name: 'feedback-c1', match: { workflowId: 'replay-feedback', role: 'checker', attempt: 1 }, reply: verdict(false) },
      { name: 'feedback-w2', match: { workflowId: 'replay-feedback', role: 'worker', attempt: 2 }, reply: text('a crash, fixed') },
      { name: 'feedback-c2', match: { workflowId: 'replay-feedback', role: 'checker', attempt: 2 }, reply: verdict(true) },
      { name: 'escalate-w1', match: { workflowId: 'replay-escalate', role: 'worker', attempt: 1 }, reply: text('first') },
      { name: 'escalate-c1', match: { workflowId: 'replay-escalate', role: 'checker', attempt: 1 }, reply: verdict(false) },
      { name: 'escalate-w2', match: { workflowId: 'replay-escalate', role: 'worker', attempt: 2 }, reply: text('after guidance: a crash') },
      { name: 'escalate-c2', match: { workflowId: 'replay-escalate', role: 'checker', attempt: 2 }, reply: verdict(true) },
      { name: 'approve-w1', match: { workflowId: 'replay-approve', role: 'worker', attempt: 1 }, reply: text('first') },
      { name: 'approve-c1', match: { workflowId: 'replay-approve', role: 'checker', attempt: 1 }, reply: verdict(false) },
      { name: 'agent-t1', match: { workflowId: 'replay-agent', role: 'worker', turn: 1 }, reply: { content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'notes.txt' } }, { type: 'tool_use', id: 'toolu_2', name: 'list_files', input: { path: '.' } }] } },
      { name: 'agent-t2', match: { workflowId: 'replay-agent', role: 'worker', turn: 2 }, reply: { content: [{ type: 'tool_use', id: 'toolu_3', name: 'write_file', input: { path: 'x.txt', content: 'x' } }] } },
      { name: 'agent-t3', match: { workflowId: 'replay-agent', role: 'worker', turn: 3 }, reply: text('a crash at 3am (notes.txt:1)') },
      { name: 'agent-c1', match: { workflowId: 'replay-agent', role: 'checker' }, reply: verdict(true) },
    ],
  },
  'record-histories',
);

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopwright-record-'));
  process.env.LOOPWRIGHT_TRANSCRIPTS = path.join(dir, 'transcripts');
  const server = await startDevServer({ dbFile: path.join(dir, 'db.sqlite'), port: await freePort(), headless: true });
  const model = await startModelServer({ script: SCRIPT, port: 0 });
  try {
    installRuntime();
    const connection = await NativeConnection.connect({ address: server.address });
    const env = { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'record' };
    const worker = await Worker.create({ connection, taskQueue: 'record', activities: createActivities({ anthropic: createAnthropic(env) }), ...workflowSource(process.env), ...WORKER_TUNING });
    const client = await LoopwrightClient.connect({ env: { ...env, TEMPORAL_ADDRESS: server.address, LOOPWRIGHT_TASK_QUEUE: 'record' } });
    const input = { task: 'Write a haiku about crashes.', rubric: ['mentions a crash'] };
    await worker.runUntil(async () => {
      await client.run('evaluate-optimize', { ...input, maxAttempts: 2 }, { id: 'replay-feedback' });
      await client.wait('replay-feedback');
      await client.run('evaluate-optimize', { ...input, maxAttempts: 1 }, { id: 'replay-escalate' });
      await client.wait('replay-escalate');
      await client.decide('replay-escalate', { kind: 'retry', by: 'ada', guidance: 'Name the crash.', attempts: 1 });
      await client.wait('replay-escalate');
      await client.run('evaluate-optimize', { ...input, maxAttempts: 1 }, { id: 'replay-approve' });
      await client.wait('replay-approve');
      await client.decide('replay-approve', { kind: 'approve', by: 'ada', note: 'override' });
      await client.wait('replay-approve');
      const workspace = mkdtempSync(path.join(tmpdir(), 'loopwright-record-ws-'));
      writeFileSync(path.join(workspace, 'notes.txt'), 'the crash happened at 3am\n');
      await client.run('evaluate-optimize', { ...input, tools: ['read_file', 'list_files', 'write_file'], workspace, autonomy: 'L1' }, { id: 'replay-agent' });
      await client.wait('replay-agent');
    });
    for (const id of ['replay-feedback', 'replay-escalate', 'replay-approve', 'replay-agent']) {
      const history = await client.temporal.workflow.getHandle(id).fetchHistory();
      const file = path.join(packageRoot(), 'test', 'replay', 'histories', `${id}.json`);
      writeFileSync(file, historyToJSON(history));
      console.log(`recorded ${id} (${history.events?.length ?? 0} events) to ${path.relative(process.cwd(), file)}`);
    }
    await client.close();
    await connection.close();
  } finally {
    await model.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
