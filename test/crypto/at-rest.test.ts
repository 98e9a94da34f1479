import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure, type Payload } from '@temporalio/common';
import { buildTrace } from '../../trace/build-trace';
import { fetchHistories } from '../../trace/fetch-histories';
import { EncryptionCodec } from '../../crypto/codec';
import { encodeHistory } from '../../crypto/decode-history';
import { initKeyFile } from '../../crypto/key-file';
import { CiphertextError, keyRingFromEnv } from '../../crypto/keyring';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { freePort, startDevServer, type DevServer } from '../../server/dev-server';
import { turnAnswers, turnCalls } from '../helpers/agent-scripts';
import { notesRepo } from '../helpers/notes-repo';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { uniqueQueue } from '../helpers/temporal';
import { databaseHolds, keyedStack, until, type KeyedStack } from './encrypted-stack';

/**
 * Payloads at rest: on a dev server of this file's own (so its SQLite file holds only these
 * runs), an encrypted run's task, tool output, candidate and failure messages are nowhere in the
 * database, while the client (status) and the trace (built from fetched history) read them.
 */
const mark = (what: string) => `LWMARK-${what}-${randomBytes(8).toString('hex')}`;
const token = () => `ghp_${randomBytes(18).toString('hex')}`;

let server: DevServer;
let dir: string;
let keys: string;
let model: ModelServer | undefined;
let stack: KeyedStack | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-at-rest-'));
  keys = initKeyFile(path.join(dir, 'keys')).file;
  server = await startDevServer({
    cli: process.env.LOOPWRIGHT_TEMPORAL_CLI,
    dbFile: path.join(dir, 'temporal.db'),
    port: await freePort(),
    headless: true,
  });
});

afterEach(async () => {
  await stack?.close();
  await model?.close();
  stack = model = undefined;
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const dbFile = () => path.join(dir, 'temporal.db');

test('the SQLite file holds the clear text of an unencrypted run (so the search below can find a leak)', async () => {
  const clear = mark('clear');
  model = await startModelServer({ script: script(workerSays(1, `Answer ${clear}`), judgeSays(1, true)), port: 0 });
  stack = await keyedStack({ address: server.address, taskQueue: uniqueQueue('clear'), keys: '', modelUrl: model.url });
  const s = stack;
  const record = await s.run(async () =>
    s.client.wait(
      (await s.client.run('evaluate-optimize', { task: `Say ${clear}.`, rubric: ['says it'], maxAttempts: 1 }))
        .workflowId,
    ),
  );
  expect(record.state).toBe('completed');
  expect(await until(() => databaseHolds(dbFile(), clear))).toBe(true);
});

test("an encrypted run's task, tool output and candidate are nowhere in the SQLite file; status and trace show them", async () => {
  const [inTask, inFile, inAnswer] = [mark('task'), mark('file'), mark('answer')];
  const [taskToken, fileToken] = [token(), token()];
  const workspace = notesRepo('lw-at-rest-repo-');
  writeFileSync(path.join(workspace, 'config.txt'), `deploy token ${fileToken} (${inFile})\n`);
  execFileSync('git', ['add', '.'], { cwd: workspace });
  execFileSync('git', ['commit', '-qm', 'config'], { cwd: workspace });
  model = await startModelServer({
    script: script(
      turnCalls(1, [['read_file', { path: 'config.txt' }]]),
      turnAnswers(2, `The file says ${inFile}; ${inAnswer}.`),
      judgeSays(1, true),
    ),
    port: 0,
  });
  stack = await keyedStack({ address: server.address, taskQueue: uniqueQueue('at-rest'), keys, modelUrl: model.url });
  const s = stack;
  const task = `Read config.txt and report what it says (${inTask}, token ${taskToken}).`;
  const { workflowId, record } = await s.run(async () => {
    const started = await s.client.run('evaluate-optimize', {
      task,
      rubric: ['quotes the file'],
      tools: ['read_file'],
      workspace,
      autonomy: 'L1',
    });
    return { workflowId: started.workflowId, record: await s.client.wait(started.workflowId) };
  });
  expect(record.state).toBe('completed');
  // the model really read the file: its tool output reached the next turn
  expect(model.requests.find((r) => r.role === 'worker' && r.turn === 2)!.lastUser).toContain(inFile);

  // The client decodes: status carries the candidate, the trace the task and the answer.
  expect((await s.client.status(workflowId)).output).toContain(inAnswer);
  const trace = JSON.stringify(buildTrace(await fetchHistories(s.client.temporal, workflowId)));
  expect(trace).toContain(inTask);
  expect(trace).toContain(inAnswer);

  // The history in the database is ciphertext (the marker of the clear run above is still found).
  await new Promise((r) => setTimeout(r, 1000));
  for (const secret of [inTask, inFile, inAnswer, taskToken, fileToken])
    expect({ secret, inDatabase: databaseHolds(dbFile(), secret) }).toEqual({ secret, inDatabase: false });
  const raw = await s.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  const encodings = new Set(JSON.stringify(raw).match(/"encoding":"[^"]*"/g));
  expect([...encodings].map((e) => Buffer.from(JSON.parse(`{${e}}`).encoding, 'base64').toString())).toContain(
    'binary/encrypted',
  );
  // Compression alone would also hide the markers above: every payload but the search attributes
  // is sealed, and it opens under the ring's key and under no other key of the same id.
  const sealed: Payload[] = [];
  await encodeHistory(raw, [{ encode: async (ps) => (sealed.push(...ps), ps), decode: async (ps) => ps }]);
  expect(sealed.length).toBeGreaterThan(10);
  expect(new Set(sealed.map((p) => Buffer.from(p.metadata!.encoding!).toString()))).toEqual(
    new Set(['binary/encrypted']),
  );
  const ring = keyRingFromEnv({ LOOPWRIGHT_KEYS: keys })!;
  const impostor = { ...ring, keys: new Map([...ring.keys.keys()].map((id) => [id, randomBytes(32)])) };
  for (const p of sealed) {
    await expect(new EncryptionCodec(ring).decode([p])).resolves.toHaveLength(1);
    await expect(new EncryptionCodec(impostor).decode([p])).rejects.toThrow(CiphertextError);
  }
});

test("an activity failure's message and stack are encrypted too, and the trace shows the message", async () => {
  const secret = mark('failure');
  model = await startModelServer({ script: script(workerSays(1, 'A draft.')), port: 0 });
  stack = await keyedStack({
    address: server.address,
    taskQueue: uniqueQueue('failure'),
    keys,
    modelUrl: model.url,
    wrap: (a) => ({
      ...a,
      judgeCandidate: async () => {
        throw ApplicationFailure.create({
          message: `judge unreachable: ${secret}`,
          type: 'JudgeDown',
          nonRetryable: true,
        });
      },
    }),
  });
  const s = stack;
  const workflowId = await s.run(async () => {
    const { workflowId: id } = await s.client.run('evaluate-optimize', {
      task: 'Write a draft.',
      rubric: ['is a draft'],
      maxAttempts: 1,
    });
    await s.client.wait(id);
    return id;
  });
  const history = await s.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  const failed = history.events!.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!
    .failure!;
  // On the wire and at rest the failure says only "Encoded failure"; its attributes are a ciphertext payload.
  expect(failed.message).toBe('Encoded failure');
  expect(Buffer.from(failed.encodedAttributes!.metadata!.encoding!).toString()).toBe('binary/encrypted');
  const trace = JSON.stringify(buildTrace(await fetchHistories(s.client.temporal, workflowId)));
  expect(trace).toContain(secret);
  await new Promise((r) => setTimeout(r, 1000));
  expect(databaseHolds(dbFile(), secret)).toBe(false);
  await s.client.temporal.workflow
    .getHandle(workflowId)
    .terminate('test done')
    .catch(() => undefined);
});
