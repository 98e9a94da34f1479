import { mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sha256Hex } from '../../../activities/transcript/canonical-json';
import { BlobCorruptError, BlobNotFoundError, BlobRefError } from '../../../activities/transcript/errors';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { must } from '../../../common/must';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'loopwright-blobs-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every file under the store's directory, relative to it. */
async function filesIn(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

function fileOf(ref: string): string {
  const hex = ref.slice('sha256:'.length);
  return path.join(dir, hex.slice(0, 2), `${hex}.json`);
}

describe('createFileBlobStore', () => {
  test('put then get round-trips a nested value under a sha256 ref stored at <2 hex>/<hex>.json', async () => {
    const store = createFileBlobStore(dir);
    const value = { b: [1, 'two', { z: null, a: true }], a: 'é\u{1F600}' };
    const ref = await store.put(value);
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await filesIn(dir)).toEqual([path.join(ref.slice(7, 9), `${ref.slice(7)}.json`)]);
    expect(await createFileBlobStore(dir).get(ref)).toEqual(value);
    expect(await store.has(ref)).toBe(true);
  });

  test('the file holds canonical JSON whose hash is the ref', async () => {
    const ref = await createFileBlobStore(dir).put({ b: 1, a: { d: 2, c: 3 } });
    const raw = await readFile(fileOf(ref));
    expect(raw.toString('utf8')).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(`sha256:${sha256Hex(raw)}`).toBe(ref);
  });

  test('a "__proto__" key from JSON.parse is kept as data, so its value does not share a ref with one lacking it', async () => {
    const store = createFileBlobStore(dir);
    const withKey = JSON.parse('{"b":2,"__proto__":{"x":1}}') as unknown;
    const ref = await store.put(withKey);
    expect(await readFile(fileOf(ref), 'utf8')).toBe('{"__proto__":{"x":1},"b":2}');
    expect(await store.put({ b: 2 })).not.toBe(ref);
  });

  test('equal values with keys in a different order give the same ref and one file', async () => {
    const store = createFileBlobStore(dir);
    const first = await store.put({ role: 'user', content: [{ type: 'text', text: 'hi' }] });
    const second = await store.put({ content: [{ text: 'hi', type: 'text' }], role: 'user' });
    expect(second).toBe(first);
    expect(await filesIn(dir)).toHaveLength(1);
    expect(await store.put({ role: 'user', content: 'hi' })).not.toBe(first);
  });

  test('concurrent puts of one value from two stores on the same directory leave one valid file and no temp files', async () => {
    const [one, other] = [createFileBlobStore(dir), createFileBlobStore(dir)];
    const value = { text: 'x'.repeat(100_000) };
    const refs = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? one : other).put(value)));
    expect(new Set(refs).size).toBe(1);
    const files = await filesIn(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/\.json$/);
    expect(await createFileBlobStore(dir).get(must(refs[0], 'twenty puts'))).toEqual(value);
  });

  test('a missing ref throws BlobNotFoundError naming the ref and the directory', async () => {
    const store = createFileBlobStore(dir);
    const ref = `sha256:${'ab'.repeat(32)}`;
    const error = await store.get(ref).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlobNotFoundError);
    expect((error as Error).message).toBe(
      `transcript blob ${ref} is not in ${dir}: is LOOPWRIGHT_TRANSCRIPTS shared by all workers?`,
    );
    expect(await store.has(ref)).toBe(false);
  });

  test('a malformed ref is refused by get and is not held by has', async () => {
    const store = createFileBlobStore(dir);
    await expect(store.get('sha256:../../etc/passwd')).rejects.toThrow(BlobRefError);
    await expect(store.get(`sha256:${'AB'.repeat(32)}`)).rejects.toThrow(/not a transcript blob ref/);
    expect(await store.has('nope')).toBe(false);
  });

  test('a corrupted file is detected on read, and putting the value again repairs it', async () => {
    const ref = await createFileBlobStore(dir).put({ message: 'original' });
    await writeFile(fileOf(ref), '{"message":"tampered"}');
    const fresh = createFileBlobStore(dir);
    const error = await fresh.get(ref).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlobCorruptError);
    expect((error as Error).message).toContain(`transcript blob ${ref} is corrupt: ${fileOf(ref)} hashes to sha256:`);

    expect(await fresh.put({ message: 'original' })).toBe(ref);
    expect(await createFileBlobStore(dir).get(ref)).toEqual({ message: 'original' });
  });

  test('a truncated file is reported as corrupt, not as invalid JSON', async () => {
    const ref = await createFileBlobStore(dir).put({ message: 'original' });
    await writeFile(fileOf(ref), '{"mess');
    await expect(createFileBlobStore(dir).get(ref)).rejects.toThrow(BlobCorruptError);
  });

  test('get serves recent blobs from memory and returns a fresh copy each time', async () => {
    const store = createFileBlobStore(dir);
    const ref = await store.put({ list: [1, 2] });
    await unlink(fileOf(ref));
    const first = await store.get<{ list: number[] }>(ref);
    first.list.push(3);
    expect(await store.get(ref)).toEqual({ list: [1, 2] });
    expect(await store.has(ref)).toBe(true);
  });

  test('the cache evicts the least recently used blob beyond cacheEntries', async () => {
    const store = createFileBlobStore(dir, { cacheEntries: 2 });
    const [a, b] = [await store.put('a'), await store.put('b')];
    await store.get(a); // a is now more recent than b
    const c = await store.put('c');
    await Promise.all([a, b, c].map((ref) => unlink(fileOf(ref))));
    expect(await store.get(a)).toBe('a');
    expect(await store.get(c)).toBe('c');
    await expect(store.get(b)).rejects.toThrow(BlobNotFoundError);
  });

  test('a blob larger than cacheChars is not cached and is read from disk', async () => {
    const store = createFileBlobStore(dir, { cacheChars: 10 });
    const ref = await store.put('a text longer than ten characters');
    await unlink(fileOf(ref));
    await expect(store.get(ref)).rejects.toThrow(BlobNotFoundError);
  });

  test('put refuses a value that JSON cannot hold', async () => {
    const store = createFileBlobStore(dir);
    await expect(store.put(undefined)).rejects.toThrow(TypeError);
    await expect(store.put({ n: BigInt(1) })).rejects.toThrow(TypeError);
    expect(await filesIn(dir)).toEqual([]);
  });
});
