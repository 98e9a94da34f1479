import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BlobKindError, BlobNotFoundError } from '../../../activities/transcript/errors';
import { createFileBlobStore, type BlobStore } from '../../../activities/transcript/store';
import {
  appendMessage,
  loadText,
  loadTranscript,
  storeText,
  type TranscriptMessage,
  type TranscriptNode,
} from '../../../activities/transcript/transcript';

let dir: string;
let store: BlobStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'loopwright-transcript-'));
  store = createFileBlobStore(dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const user = (text: string): TranscriptMessage => ({ role: 'user', content: text });
const assistant = (text: string): TranscriptMessage => ({ role: 'assistant', content: [{ type: 'text', text }] });

async function appendAll(parent: string | null, messages: TranscriptMessage[]): Promise<string | null> {
  let head = parent;
  for (const m of messages) head = await appendMessage(store, head, m);
  return head;
}

describe('appendMessage and loadTranscript', () => {
  test('a null head is an empty transcript', async () => {
    expect(await loadTranscript(store, null)).toEqual([]);
  });

  test('a chain of 100 appended messages loads back oldest first, also from a fresh store', async () => {
    const messages = Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? user(`u${i}`) : assistant(`a${i}`)));
    const head = await appendAll(null, messages);
    expect(await loadTranscript(store, head)).toEqual(messages);
    expect(await loadTranscript(createFileBlobStore(dir), head)).toEqual(messages);
  });

  test('loading a recent 100-node chain is served from the cache without touching the disk', async () => {
    const messages = Array.from({ length: 100 }, (_, i) => user(`m${i}`));
    const head = await appendAll(null, messages);
    await rm(dir, { recursive: true, force: true });
    expect(await loadTranscript(store, head)).toEqual(messages);
  });

  test('each node stores its parent ref and its message', async () => {
    const first = await appendMessage(store, null, user('task'));
    const second = await appendMessage(store, first, assistant('ok'));
    expect(await store.get<TranscriptNode>(second)).toEqual({ parent: first, message: assistant('ok') });
    expect(await store.get<TranscriptNode>(first)).toEqual({ parent: null, message: user('task') });
  });

  test('appending the same message to the same parent twice gives the same head (a retry is a no-op)', async () => {
    const root = await appendMessage(store, null, user('task'));
    const once = await appendMessage(store, root, assistant('answer'));
    expect(await appendMessage(store, root, assistant('answer'))).toBe(once);
    expect(await loadTranscript(store, once)).toEqual([user('task'), assistant('answer')]);
  });

  test('two branches from one parent do not interfere, and the parent still loads as before', async () => {
    const base = await appendAll(null, [user('task'), assistant('plan')]);
    const left = await appendAll(base, [user('try A'), assistant('A done')]);
    const right = await appendAll(base, [user('try B')]);
    expect(left).not.toBe(right);
    expect(await loadTranscript(store, left)).toEqual([
      user('task'),
      assistant('plan'),
      user('try A'),
      assistant('A done'),
    ]);
    expect(await loadTranscript(store, right)).toEqual([user('task'), assistant('plan'), user('try B')]);
    expect(await loadTranscript(store, base)).toEqual([user('task'), assistant('plan')]);
  });

  test('tool_use and tool_result blocks round-trip unchanged', async () => {
    const call: TranscriptMessage = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'run', input: { cmd: 'npm test', env: { CI: '1' } } }],
    };
    const result: TranscriptMessage = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'FAIL', is_error: true }],
    };
    expect(await loadTranscript(store, await appendAll(null, [call, result]))).toEqual([call, result]);
  });

  test('appending to a parent the store does not hold fails with the store error naming the directory', async () => {
    const missing = `sha256:${'0'.repeat(64)}`;
    const error = await appendMessage(store, missing, user('x')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlobNotFoundError);
    expect((error as Error).message).toContain(dir);
  });

  test('loading a transcript whose middle node is missing fails with BlobNotFoundError', async () => {
    const root = await appendMessage(store, null, user('task'));
    const head = await appendMessage(createFileBlobStore(dir), root, user('next'));
    await rm(path.join(dir, root.slice(7, 9)), { recursive: true, force: true });
    await expect(loadTranscript(createFileBlobStore(dir), head)).rejects.toThrow(BlobNotFoundError);
  });

  test('a stored text passed as a head is refused as the wrong kind of blob', async () => {
    const text = await storeText(store, 'not a node');
    await expect(loadTranscript(store, text)).rejects.toThrow(BlobKindError);
  });
});

describe('storeText and loadText', () => {
  test('a large text round-trips, and equal texts share one ref', async () => {
    const big = 'line\n'.repeat(200_000);
    const ref = await storeText(store, big);
    expect(await storeText(store, big)).toBe(ref);
    expect(await loadText(createFileBlobStore(dir), ref)).toBe(big);
  });

  test('loadText refuses a transcript node', async () => {
    const node = await appendMessage(store, null, user('task'));
    await expect(loadText(store, node)).rejects.toThrow(`transcript blob ${node} holds another object, not a text`);
  });
});
