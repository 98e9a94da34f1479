import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readReportFile } from '../../../activities/report-file';
import { keyRingFromEnv } from '../../../crypto/keyring';
// commander (ESM) is only used by `improve`'s command registration, which status imports beside the summary it needs.
jest.mock('commander', () => ({ Option: class {} }));
import { listCommand } from '../../../client/commands/list';
import { reviewCommand } from '../../../client/commands/review';
import { statusCommand } from '../../../client/commands/status';
import { traceCommand } from '../../../client/commands/trace';
import { summarize } from '../../../client/output';
import { runRedaction } from '../../../client/run-redaction';
import type { RunRecord } from '../../../common/run-record';
import { LoopItemKey } from '../../../common/search-attributes';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { testStack, type TestStack } from '../../helpers/temporal';

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
  model = await startModelServer({
    script: script(workerSays(1, `Done. The password is ${PASSWORD}; token: ${GITHUB}`), judgeSays(1, true)),
    port: 0,
  });
  const s = (stack = await testStack('redaction', model.url, {
    LOOPWRIGHT_REDACT: 'DB_PASSWORD',
    DB_PASSWORD: PASSWORD,
  }));
  const traceDir = mkdtempSync(path.join(tmpdir(), 'lw-redaction-'));
  const task = `Rotate the key ${KEY} and check api_key=abcd1234efgh and DB_PASSWORD=${PASSWORD}.`;
  const { workflowId, record } = await s.run(async () => {
    const started = await s.client.run(
      'evaluate-optimize',
      { task, rubric: ['rotates it'], traceDir },
      { itemKey: `deploy DB_PASSWORD=${PASSWORD}` },
    );
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
  expect(
    await traceCommand(s.client, workflowId, { json: true }, { out: (l) => json.push(l), err: () => undefined }),
  ).toBe(0);
  // Outside the workspace the report is sealed with the suite's ring: read it as `loopwright report` does.
  const report = readReportFile(record.traceReport!.path!, keyRingFromEnv(process.env)) ?? '';
  expect(report).toContain('The password is [redacted]; token: [redacted]');

  const seen = {
    summary,
    attribute: String(description.typedSearchAttributes.get(LoopItemKey)),
    text: lines.join('\n'),
    json: json.join('\n'),
    report,
  };
  for (const [where, text] of Object.entries(seen))
    for (const secret of SECRETS) expect({ where, leaked: text.includes(secret) }).toEqual({ where, leaked: false });
});

/**
 * Issue 14, point 4: a secret the process holds under an ordinary name (no KEY, TOKEN, ...), and
 * a GitHub token, reach the run encoded and obfuscated (base64, url-safe base64, hex, %-encoding,
 * zero-width characters, spaced out); no surface a person reads shows any form of them.
 */
const HELD = 'Zq7-opaque-Val9x';
const b64 = (t: string) => Buffer.from(t).toString('base64');
const forms = (secret: string) => [
  secret,
  secret.slice(0, 10),
  secret.slice(-10),
  b64(secret),
  Buffer.from(secret).toString('base64url'),
  Buffer.from(secret).toString('hex'),
  encodeURIComponent(secret),
];

test('encoded and obfuscated secrets show in no form in status, review, trace, list or the Web UI', async () => {
  process.env.OBSCURE_THING = HELD;
  const zw = `${HELD.slice(0, 4)}\u200B${HELD.slice(4, 9)}\u2060${HELD.slice(9)}`;
  const percent = [...HELD].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
  const candidate = `Done: ${percent} and ${HELD.split('').join(' ')} and ${Buffer.from(`tok ${GITHUB}`).toString('base64url')}`;
  const reason = `leaks ${b64(GITHUB)} and ${GITHUB.slice(0, 4)}\u200B${GITHUB.slice(4)}`;
  model = await startModelServer({ script: script(workerSays(1, candidate), judgeSays(1, false, [reason])), port: 0 });
  const s = (stack = await testStack('redaction-encoded', model.url, { OBSCURE_THING: HELD }));
  const task = `Use ${b64(`the value ${HELD}`)} and ${zw} and ${Buffer.from(HELD).toString('hex')} to deploy.`;
  const io = () => {
    const lines: string[] = [];
    return { lines, out: { out: (l: string) => lines.push(l), err: () => undefined } };
  };
  type Out = ReturnType<typeof io>['out'];
  const seen: Record<string, string> = {};
  const started = await s.client.run('evaluate-optimize', { task, rubric: ['no secrets'], maxAttempts: 1 });
  const workflowId = started.workflowId;
  const handle = s.client.temporal.workflow.getHandle(workflowId);
  await s.run(async () => {
    // Out of attempts, the run waits for a human: every surface is read while it waits (the worker answers queries).
    const record = await s.client.wait(workflowId);
    expect(record.state).toBe('awaiting_human');
    expect(record.attempts[0]?.candidate).toBe(candidate); // the run itself kept what the model said
    seen.details = (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
    expect(seen.details).toContain('last verdict: fail');
    const description = await handle.describe();
    seen.summary = (await description.staticSummary()) ?? '';
    expect(seen.summary).toContain('Use [redacted] and [redacted] and [redacted] to deploy.');
    seen.statusLines = summarize(await s.client.status(workflowId), await runRedaction(s.client, workflowId)).join(
      '\n',
    );
    for (const [name, run] of [
      ['status', (o: Out) => statusCommand(s.client, workflowId, {}, o)],
      ['statusJson', (o: Out) => statusCommand(s.client, workflowId, { json: true }, o)],
      ['review', (o: Out) => reviewCommand(s.client, workflowId, { diff: false }, o, {})],
      ['reviewJson', (o: Out) => reviewCommand(s.client, workflowId, { diff: false, json: true }, o, {})],
      ['trace', (o: Out) => traceCommand(s.client, workflowId, {}, o)],
      ['traceJson', (o: Out) => traceCommand(s.client, workflowId, { json: true }, o)],
      ['traceMarkdown', (o: Out) => traceCommand(s.client, workflowId, { markdown: true }, o)],
      ['list', (o: Out) => listCommand(s.client, {}, o)],
      ['listJson', (o: Out) => listCommand(s.client, { json: true }, o)],
    ] as const) {
      const c = io();
      expect(await run(c.out)).toBe(0);
      seen[name] = c.lines.join('\n');
    }
    await handle.terminate('test done');
  });
  expect(seen.status).toContain('[redacted]');
  expect(seen.traceJson).toContain('[redacted]');
  expect(seen.list).toContain(workflowId);
  for (const [where, text] of Object.entries(seen)) {
    for (const form of [...forms(HELD), ...forms(GITHUB), percent, zw])
      expect({ where, form, leaked: text.includes(form) }).toEqual({ where, form, leaked: false });
  }
});
