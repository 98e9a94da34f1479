import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildTrace } from '../../trace/build-trace';
import { fetchHistories } from '../../trace/fetch-histories';
import { LoopwrightClient } from '../../client/loopwright-client';
import { initKeyFile, rotateRing } from '../../crypto/key-file';
import { keyRingFromEnv } from '../../crypto/keyring';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { testAddress, uniqueQueue } from '../helpers/temporal';
import { keyedStack, type KeyedStack } from './encrypted-stack';

/**
 * Key rotation mid-run: a run that waits for a person, the ring rotated (a new current key,
 * the old one kept), its worker restarted with the new ring, approved: it completes and every
 * payload of its history, under either key, decodes. A ring without the old key names it.
 */
let dir: string;
let model: ModelServer | undefined;
const stacks: KeyedStack[] = [];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-rotation-'));
});

afterAll(async () => {
  for (const s of stacks) await s.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

const keyIdsOf = (history: unknown) =>
  new Set(
    [...JSON.stringify(history).matchAll(/"encryption-key-id":"([^"]*)"/g)].map((m) =>
      Buffer.from(m[1] ?? '', 'base64').toString(),
    ),
  );

test('a run started under one key completes after a rotation, and its whole history decodes; without the old key it names the key', async () => {
  const keys = path.join(dir, 'keys');
  const first = initKeyFile(keys, new Date('2026-01-01T00:00:00Z')).keyId;
  const taskQueue = uniqueQueue('rotation');
  model = await startModelServer({
    script: script(workerSays(1, 'The first and only draft.'), judgeSays(1, false, ['mentions a crash'])),
    port: 0,
  });
  const before = await keyedStack({ address: testAddress(), taskQueue, keys, modelUrl: model.url });
  stacks.push(before);
  const workflowId = await before.run(async () => {
    const { workflowId: id } = await before.client.run('evaluate-optimize', {
      task: 'Write a haiku about a power cut.',
      rubric: ['mentions a crash'],
      maxAttempts: 1,
    });
    expect((await before.client.wait(id)).state).toBe('awaiting_human');
    return id;
  });

  const rotated = rotateRing(keys, new Date('2026-02-01T00:00:00Z'));
  expect(rotated).toMatchObject({ previous: first, keys: 2 });
  expect(readFileSync(keys, 'utf8')).toContain(`${first}=`);
  const after = await keyedStack({ address: testAddress(), taskQueue, keys, modelUrl: model.url });
  stacks.push(after);
  const record = await after.run(async () => {
    await after.client.decide(workflowId, { kind: 'approve', by: 'ada', note: 'ship it after the rotation' });
    return after.client.wait(workflowId);
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'approved', output: 'The first and only draft.' });

  const raw = await after.client.temporal.workflow.getHandle(workflowId).fetchHistory();
  expect(keyIdsOf(raw)).toEqual(new Set([first, rotated.keyId]));
  const trace = buildTrace(await fetchHistories(after.client.temporal, workflowId));
  expect(JSON.stringify(trace)).toContain('Write a haiku about a power cut.');
  expect(JSON.stringify(trace)).toContain('ship it after the rotation');

  // A ring that lost the first key: reading the run says which key is missing and where to look.
  const onlyNew = path.join(dir, 'only-new');
  const ring = keyRingFromEnv({ LOOPWRIGHT_KEYS: keys })!;
  writeFileSync(onlyNew, `${rotated.keyId}=${ring.keys.get(rotated.keyId)!.toString('base64')}\n`, { mode: 0o600 });
  const lost = await LoopwrightClient.connect({
    env: { TEMPORAL_ADDRESS: testAddress(), LOOPWRIGHT_TASK_QUEUE: taskQueue, LOOPWRIGHT_KEYS: onlyNew },
  });
  try {
    await expect(fetchHistories(lost.temporal, workflowId)).rejects.toThrow(
      `key ${first} is not in the key ring ${onlyNew}`,
    );
    await expect(fetchHistories(lost.temporal, workflowId)).rejects.toMatchObject({
      name: 'KeyMissingError',
      keyId: first,
    });
  } finally {
    await lost.close();
  }
});
