import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { traceCommand } from '../../client/commands/trace';
import type { RunRecord } from '../../common/run-record';
import { LoopItemKey } from '../../common/search-attributes';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { testStack, type TestStack } from '../helpers/temporal';

/**
 * Secrets never reach the trace, the reports, the search attributes or the Web UI's summary and
 * details: by pattern (an Anthropic key, a GitHub token), by name (`api_key=…`, and DB_PASSWORD
 * configured in LOOPWRIGHT_REDACT) and by value (DB_PASSWORD's value on its own).
 */
const PASSWORD = 'hunter2-s3cret-Xy';
const KEY = 'sk-ant-api03-SECRETSECRET0123456789';
const GITHUB = 'ghp_0123456789abcdefghijABCDEFGHIJ0123';
const SECRETS = [PASSWORD, KEY, GITHUB, 'abcd1234efgh'];

let model: ModelServer | undefined;
let stack: TestStack | undefined;
const saved = { ...process.env };

afterEach(async () => {
  await stack?.close();
  await model?.close();
  process.env = { ...saved };
});

test('a run whose task, item key and answer carry secrets shows none of them anywhere a person reads', async () => {
  // The worker here runs in this process: its reports and traces redact this environment's secrets.
  process.env.LOOPWRIGHT_REDACT = 'DB_PASSWORD';
  process.env.DB_PASSWORD = PASSWORD;
  model = await startModelServer({ script: script(workerSays(1, `Done. The password is ${PASSWORD}; token: ${GITHUB}`), judgeSays(1, true)), port: 0 });
  const s = (stack = await testStack('redaction', model.url, { LOOPWRIGHT_REDACT: 'DB_PASSWORD', DB_PASSWORD: PASSWORD }));
  const traceDir = mkdtempSync(path.join(tmpdir(), 'lw-redaction-'));
  const task = `Rotate the key ${KEY} and check api_key=abcd1234efgh and DB_PASSWORD=${PASSWORD}.`;
  const { workflowId, record } = await s.run(async () => {
    const started = await s.client.run('evaluate-optimize', { task, rubric: ['rotates it'], traceDir }, { itemKey: `deploy DB_PASSWORD=${PASSWORD}` });
    const handle = s.client.temporal.workflow.getHandle(started.workflowId);
    return { workflowId: started.workflowId, record: (await handle.result()) as RunRecord };
  });
  expect(record.state).toBe('completed');
  const handle = s.client.temporal.workflow.getHandle(workflowId);
  const description = await handle.describe();
  expect(description.typedSearchAttributes.get(LoopItemKey)).toBe('deploy DB_PASSWORD=[redacted]');
  const summary = (await description.staticSummary()) ?? '';
  expect(summary).toContain('Rotate the key [redacted] and check api_key=[redacted]');

  const lines: string[] = [];
  expect(await traceCommand(s.client, workflowId, {}, { out: (l) => lines.push(l), err: () => undefined })).toBe(0);
  const json: string[] = [];
  expect(await traceCommand(s.client, workflowId, { json: true }, { out: (l) => json.push(l), err: () => undefined })).toBe(0);
  const report = readFileSync(record.traceReport!.path!, 'utf8');
  expect(report).toContain('The password is [redacted]; token: [redacted]');

  const seen = { summary, attribute: String(description.typedSearchAttributes.get(LoopItemKey)), text: lines.join('\n'), json: json.join('\n'), report };
  for (const [where, text] of Object.entries(seen)) for (const secret of SECRETS) expect({ where, leaked: text.includes(secret) }).toEqual({ where, leaked: false });
});
