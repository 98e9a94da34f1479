import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { canonicalJson, REF_PREFIX, refHex, sha256Hex } from './canonical-json';
import { BlobCorruptError, BlobNotFoundError, BlobRefError } from './errors';
import { LruCache } from './lru-cache';

/**
 * A content-addressed, append-only store of JSON values. A value's ref is the SHA-256 of its
 * canonical JSON, so writing the same value twice (a retried activity, a replay) gives the same
 * ref and changes nothing.
 */
export interface BlobStore {
  /** Stores a JSON value and returns its ref, `sha256:<hex>`. Idempotent. */
  put(value: unknown): Promise<string>;
  /** The value under `ref`, as a fresh copy. Throws when the ref is malformed, missing or corrupt. */
  get<T = unknown>(ref: string): Promise<T>;
  /** Whether the store holds `ref` (false for a malformed ref). Does not verify the content. */
  has(ref: string): Promise<boolean>;
}

/** Bounds of the in-memory cache in front of the disk. */
export interface BlobCacheOptions {
  /** Most blobs kept in memory; 2,000 by default. */
  cacheEntries?: number;
  /** Most characters of JSON kept in memory; 64 million by default. */
  cacheChars?: number;
}

/**
 * A {@link BlobStore} in a directory, one file per blob at `<dir>/<first 2 hex>/<hex>.json`
 * holding the value's canonical JSON. Every worker that runs transcript activities must see the
 * same directory (LOOPWRIGHT_TRANSCRIPTS).
 *
 * - `put` writes only when the file is absent or corrupt, through a temp file in the same
 *   directory that is synced and then renamed over the target, so readers never see a partial
 *   blob and concurrent writers of the same blob (in one process or many) are safe.
 * - `get` checks the hash of what it read: corruption is a {@link BlobCorruptError}, a missing
 *   blob a {@link BlobNotFoundError} that names the ref and the directory.
 * - An LRU cache (see {@link BlobCacheOptions}) keeps recent blobs' JSON, so reading a transcript
 *   every turn does not touch the disk; each `get` still parses, so callers own what they get.
 */
export function createFileBlobStore(dir: string, options: BlobCacheOptions = {}): BlobStore {
  const root = path.resolve(dir);
  const cache = new LruCache<string>(options.cacheEntries ?? 2000, options.cacheChars ?? 64_000_000, (s) => s.length);
  const fileOf = (hex: string): string => path.join(root, hex.slice(0, 2), `${hex}.json`);

  /** The blob's JSON if its file exists and hashes to `hex`; undefined if absent; throws if corrupt. */
  async function readVerified(ref: string, hex: string): Promise<string | undefined> {
    const file = fileOf(hex);
    let raw: Buffer;
    try {
      raw = await readFile(file);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    const actual = sha256Hex(raw);
    if (actual !== hex) throw new BlobCorruptError(ref, file, REF_PREFIX + actual);
    return raw.toString('utf8');
  }

  async function writeAtomically(hex: string, json: string): Promise<void> {
    const file = fileOf(hex);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await open(tmp, 'wx');
      try {
        await handle.writeFile(json, 'utf8');
        // Synced before the rename: a crash must not leave a named but empty blob behind.
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  return {
    async put(value) {
      const json = canonicalJson(value);
      const hex = sha256Hex(json);
      const ref = REF_PREFIX + hex;
      const onDisk = await readVerified(ref, hex).catch((err: unknown) => {
        if (err instanceof BlobCorruptError) return undefined; // rewritten below: put repairs it
        throw err;
      });
      if (onDisk === undefined) await writeAtomically(hex, json);
      cache.set(ref, json);
      return ref;
    },

    async get<T = unknown>(ref: string): Promise<T> {
      const hex = refHex(ref);
      if (hex === undefined) throw new BlobRefError(ref);
      let json = cache.get(ref);
      if (json === undefined) {
        json = await readVerified(ref, hex);
        if (json === undefined) throw new BlobNotFoundError(ref, root);
        cache.set(ref, json);
      }
      return JSON.parse(json) as T;
    },

    async has(ref) {
      const hex = refHex(ref);
      if (hex === undefined) return false;
      if (cache.has(ref)) return true;
      try {
        await stat(fileOf(hex));
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    },
  };
}

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}
