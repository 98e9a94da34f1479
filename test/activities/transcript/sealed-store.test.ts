import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KeyMissingError, newKey, parseKeyFile, type KeyRing } from '../../../crypto/keyring';
import { blobRef, canonicalJson, sha256Hex } from '../../../activities/transcript/canonical-json';
import { BlobCorruptError, BlobKeyMissingError, BlobUnreadableError } from '../../../activities/transcript/errors';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { loadText, storeText } from '../../../activities/transcript/transcript';

/** The transcript store sealed with the operator's key ring (activities/sealed-file.ts). */
const MARKER = 'MARKER-7f3a-secret-from-a-tool-output';
const K1 = newKey();
const K2 = newKey();
const ring = (lines: string): KeyRing => parseKeyFile(lines, '/etc/loopwright/keys');
const old = () => ring(`k1=${K1}`);
const rotated = () => ring(`k1=${K1}\nk2=${K2}\ncurrent=k2`);
const onlyNew = () => ring(`k2=${K2}`);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'loopwright-sealed-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const fileOf = (ref: string) => {
  const hex = ref.slice('sha256:'.length);
  return path.join(dir, hex.slice(0, 2), `${hex}.json`);
};

async function allBytes(): Promise<Buffer> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  return Buffer.concat(await Promise.all(files.map((f) => readFile(f))));
}

describe('createFileBlobStore with a key ring', () => {
  test('round-trips a value stored as ciphertext with a header naming the key, under the plaintext hash', async () => {
    const value = { parent: null, message: { role: 'user', content: `read this: ${MARKER}` } };
    const ref = await createFileBlobStore(dir, { keys: old() }).put(value);
    // The ref is the SHA-256 of the plaintext canonical JSON, as without a ring.
    expect(ref).toBe(blobRef(value));
    expect(ref).toBe(`sha256:${sha256Hex(canonicalJson(value))}`);
    const raw = await readFile(fileOf(ref));
    expect(raw.subarray(0, 14).toString('ascii')).toBe('lwsealed:1:k1\n');
    expect(raw.includes(Buffer.from(MARKER))).toBe(false);
    expect(raw.includes(Buffer.from('"role"'))).toBe(false);
    expect(await createFileBlobStore(dir, { keys: old() }).get(ref)).toEqual(value);
  });

  test('dedupes: the same value gives the same ref and one file, with or without a ring', async () => {
    const sealed = createFileBlobStore(dir, { keys: old() });
    const a = await sealed.put('same text');
    const b = await createFileBlobStore(dir, { keys: old() }).put('same text');
    const c = await createFileBlobStore(dir).put('same text');
    expect(new Set([a, b, c]).size).toBe(1);
    expect((await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.json'))).toHaveLength(1);
    // a put without a ring leaves the sealed blob sealed
    expect((await readFile(fileOf(a))).subarray(0, 9).toString()).toBe('lwsealed:');
    expect(await sealed.has(a)).toBe(true);
  });

  test("a sealed blob copied under another blob's name does not open (the ref is bound to the ciphertext)", async () => {
    const store = createFileBlobStore(dir, { keys: old() });
    const a = await store.put({ who: 'a' });
    const b = await store.put({ who: 'b' });
    await copyFile(fileOf(a), fileOf(b));
    const fresh = createFileBlobStore(dir, { keys: old() });
    await expect(fresh.get(b)).rejects.toThrow(BlobUnreadableError);
    await expect(fresh.get(b)).rejects.toThrow(
      new RegExp(`transcript blob ${b} is unreadable: .*does not authenticate.*delete the file and retry`),
    );
    // put repairs it: the value is known, so the blob is sealed again under its own name
    await fresh.put({ who: 'b' });
    expect(await createFileBlobStore(dir, { keys: old() }).get(b)).toEqual({ who: 'b' });
  });

  test('a flipped ciphertext byte is unreadable, not silently wrong', async () => {
    const ref = await createFileBlobStore(dir, { keys: old() }).put('some text');
    const raw = await readFile(fileOf(ref));
    raw.writeUInt8(raw.readUInt8(raw.length - 20) ^ 1, raw.length - 20);
    await writeFile(fileOf(ref), raw);
    await expect(createFileBlobStore(dir, { keys: old() }).get(ref)).rejects.toThrow(BlobUnreadableError);
  });

  test('legacy plaintext blobs stay readable with a ring, and a put with the ring seals them', async () => {
    const ref = await createFileBlobStore(dir).put(`legacy ${MARKER}`);
    expect(await readFile(fileOf(ref), 'utf8')).toBe(JSON.stringify(`legacy ${MARKER}`));
    const sealed = createFileBlobStore(dir, { keys: old() });
    expect(await loadText(sealed, ref)).toBe(`legacy ${MARKER}`);
    expect(await createFileBlobStore(dir, { keys: old() }).put(`legacy ${MARKER}`)).toBe(ref);
    expect((await allBytes()).includes(Buffer.from(MARKER))).toBe(false);
    expect(await loadText(createFileBlobStore(dir, { keys: old() }), ref)).toBe(`legacy ${MARKER}`);
  });

  test('a plaintext blob that does not hash to its name is still corrupt with a ring', async () => {
    const ref = await createFileBlobStore(dir).put({ message: 'original' });
    await writeFile(fileOf(ref), JSON.stringify({ message: 'edited' }));
    await expect(createFileBlobStore(dir, { keys: old() }).get(ref)).rejects.toThrow(BlobCorruptError);
  });

  test('after a rotation new blobs use the new key and old blobs still read', async () => {
    const before = await storeText(createFileBlobStore(dir, { keys: old() }), 'before rotation');
    const store = createFileBlobStore(dir, { keys: rotated() });
    const after = await storeText(store, 'after rotation');
    expect((await readFile(fileOf(before))).subarray(0, 14).toString()).toBe('lwsealed:1:k1\n');
    expect((await readFile(fileOf(after))).subarray(0, 14).toString()).toBe('lwsealed:1:k2\n');
    expect(await loadText(store, before)).toBe('before rotation');
    expect(await loadText(store, after)).toBe('after rotation');
    // a put of an old blob with the new ring leaves it as it was: it opens, so nothing to repair
    await store.put('before rotation');
    expect((await readFile(fileOf(before))).subarray(0, 14).toString()).toBe('lwsealed:1:k1\n');
  });

  test('with the old key missing, reading fails with the KeyMissingError naming the key, the ring and the blob', async () => {
    const ref = await storeText(createFileBlobStore(dir, { keys: old() }), 'under k1');
    const store = createFileBlobStore(dir, { keys: onlyNew() });
    const err = await store.get(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyMissingError);
    expect(err).toBeInstanceOf(BlobKeyMissingError);
    expect(err).toMatchObject({ keyId: 'k1', ref });
    expect((err as Error).message).toBe(
      `transcript blob ${ref} (${fileOf(ref)}) cannot be read: key k1 is not in the key ring /etc/loopwright/keys: this data was encrypted with it; restore the key from your backup (see README "Secrets at rest")`,
    );
    // put does not overwrite a blob it cannot verify: another worker's ring may hold k1
    await store.put('under k1');
    expect((await readFile(fileOf(ref))).subarray(0, 14).toString()).toBe('lwsealed:1:k1\n');
  });

  test('without a ring, a sealed blob fails with a KeyMissingError that says no ring is set', async () => {
    const ref = await storeText(createFileBlobStore(dir, { keys: old() }), 'under k1');
    await expect(createFileBlobStore(dir).get(ref)).rejects.toThrow(
      /key k1 is not in the key ring \(none: LOOPWRIGHT_KEYS is not set in this process\)/,
    );
  });

  test('without a ring, blobs are written exactly as before: the canonical JSON', async () => {
    const ref = await createFileBlobStore(dir).put({ b: 1, a: MARKER });
    expect(await readFile(fileOf(ref), 'utf8')).toBe(`{"a":"${MARKER}","b":1}`);
  });

  test('a sealed header of an unknown version is unreadable and says a newer Loopwright wrote it', async () => {
    const ref = blobRef('x');
    await mkdir(path.dirname(fileOf(ref)), { recursive: true });
    await writeFile(fileOf(ref), 'lwsealed:9:k1\n0123456789012345678901234567890');
    await expect(createFileBlobStore(dir, { keys: old() }).get(ref)).rejects.toThrow(
      /format version 9 is not 1: it was written by a newer Loopwright/,
    );
  });
});
