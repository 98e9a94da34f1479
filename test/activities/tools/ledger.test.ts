import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { runTool } from '../../../activities/agent/run-tool';
import { createFileLedger } from '../../../activities/tools/ledger';
import { createToolRegistry } from '../../../activities/tools/registry';
import type { Tool } from '../../../activities/tools/types';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { appendMessage } from '../../../activities/transcript/transcript';
import { parseKeyFile } from '../../../crypto/keyring';
import { tempDir } from './workspace';

/** The worker's tool ledger: a tool call retried under the same activity (a lost worker) is not run twice. */
const ring = parseKeyFile(`k1=${Buffer.alloc(32, 7).toString('base64')}\n`, 'test ring');

test('runTool retried under the same activity answers from the ledger without running the tool again; another activity runs it', async () => {
  let runs = 0;
  const counter: Tool<{ n: number }> = {
    name: 'count',
    description: 'counts',
    class: 'write',
    input: z.object({ n: z.number() }),
    run: async ({ n }) => `run ${++runs} of ${n} SECRET-OUTPUT`,
  };
  const store = createFileBlobStore(tempDir('blobs'));
  const ledgerDir = tempDir('ledger');
  const deps = { store, registry: createToolRegistry([counter]), ledger: createFileLedger(ledgerDir, ring) };
  const head = await appendMessage(store, null, {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'count', input: { n: 3 } }],
  });
  const input = {
    workflowId: 'wf',
    attempt: 1,
    turn: 1,
    assistantHead: head,
    toolUseId: 'toolu_1',
    name: 'count',
    root: tempDir('root'),
    autonomy: 'L3' as const,
    available: ['count'],
    allowedCommands: [],
    commandTimeoutMs: 1000,
    outputCapChars: 1000,
  };
  const env = (activityId: string) =>
    new MockActivityEnvironment({ activityId, workflowExecution: { workflowId: 'wf', runId: 'run-1' } });
  const first = (await env('5').run(runTool, deps, input)) as Awaited<ReturnType<typeof runTool>>;
  const retried = await env('5').run(runTool, deps, input);
  expect(retried).toEqual(first);
  expect(runs).toBe(1);
  expect(first.preview).toContain('run 1 of 3');
  await env('6').run(runTool, deps, input);
  expect(runs).toBe(2);
  // The records are sealed with the ring: the tool's output is not on disk in clear.
  const files = readdirSync(ledgerDir);
  expect(files.length).toBeGreaterThan(0);
  for (const f of files) expect(readFileSync(path.join(ledgerDir, f)).includes('SECRET-OUTPUT')).toBe(false);
});
