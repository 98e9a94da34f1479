import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { KeyMissingError, type KeyRing } from '../../crypto/keyring';
import { writeFileAtomically } from '../../server/atomic-file';
import { isSealed, openFile, sealFile, SealedFormatError, SealedOpenError } from '../sealed-file';
import { canonicalJson, REF_PREFIX, refHex, sha256Hex } from './canonical-json';
import { BlobCorruptError, BlobKeyMissingError, BlobNotFoundError, BlobRefError, BlobUnreadableError } from './errors';
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

/** Options of {@link createFileBlobStore}. */
export interface FileBlobStoreOptions extends BlobCacheOptions {
  /**
   * The operator's key ring (LOOPWRIGHT_KEYS). With one, blobs are written sealed with its
   * current key; without, in clear, as before. Blobs of both kinds are read either way
   * (a sealed one needs its key).
   */
  keys?: KeyRing;
}

/** What readVerified found on disk. */
interface OnDisk {
  json: string;
  sealed: boolean;
}

/** A sealed blob whose key this process lacks: present, but neither verified nor rewritten. */
const UNVERIFIED: OnDisk = { json: '', sealed: true };

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
 * - With a key ring (`options.keys`) the file holds the JSON sealed (activities/sealed-file.ts:
 *   a `lwsealed:1:<key id>` header, then AES-256-GCM bound to the ref), not the JSON. The ref
 *   and the file's name stay the SHA-256 of the plaintext JSON, so dedupe, refs in history and
 *   the layout are unchanged, and `get` verifies that hash after opening. Binding the ref means a
 *   sealed blob copied over another's name does not open. Plaintext blobs (written without a
 *   ring) stay readable, and `put` of one rewrites it sealed. A sealed blob whose key the ring
 *   lacks is a {@link BlobKeyMissingError} (a KeyMissingError naming the key id).
 */
export function createFileBlobStore(dir: string, options: FileBlobStoreOptions = {}): BlobStore {
  const root = path.resolve(dir);
  const keys = options.keys;
  const cache = new LruCache<string>(options.cacheEntries ?? 2000, options.cacheChars ?? 64_000_000, (s) => s.length);
  const fileOf = (hex: string): string => path.join(root, hex.slice(0, 2), `${hex}.json`);

  /** The blob's JSON if its file exists and (once opened) hashes to `hex`; undefined if absent; throws if corrupt. */
  async function readVerified(ref: string, hex: string): Promise<OnDisk | undefined> {
    const file = fileOf(hex);
    let raw: Buffer;
    try {
      raw = await readFile(file);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    const sealed = isSealed(raw);
    const plain = sealed ? openBlob(ref, file, raw) : raw;
    const actual = sha256Hex(plain);
    if (actual !== hex) throw new BlobCorruptError(ref, file, REF_PREFIX + actual);
    return { json: plain.toString('utf8'), sealed };
  }

  function openBlob(ref: string, file: string, raw: Buffer): Buffer {
    try {
      return openFile(keys, raw, ref, file);
    } catch (err) {
      if (err instanceof KeyMissingError) throw new BlobKeyMissingError(ref, file, err);
      if (err instanceof SealedOpenError || err instanceof SealedFormatError)
        throw new BlobUnreadableError(ref, file, err.message);
      throw err;
    }
  }

  return {
    async put(value) {
      const json = canonicalJson(value);
      const hex = sha256Hex(json);
      const ref = REF_PREFIX + hex;
      const onDisk = await readVerified(ref, hex).catch((err: unknown) => {
        if (err instanceof BlobCorruptError || err instanceof BlobUnreadableError) return undefined; // rewritten below: put repairs it
        // Sealed under a key this process lacks: another worker's ring may hold it, so it stays.
        if (err instanceof BlobKeyMissingError) return UNVERIFIED;
        throw err;
      });
      // A plaintext blob from before the ring was configured is rewritten sealed.
      if (onDisk === undefined || (keys && !onDisk.sealed))
        // Synced before the rename: a crash must not leave a named but empty blob behind.
        await writeFileAtomically(fileOf(hex), keys ? sealFile(keys, json, ref) : json);
      cache.set(ref, json);
      return ref;
    },

    async get<T = unknown>(ref: string): Promise<T> {
      const hex = refHex(ref);
      if (hex === undefined) throw new BlobRefError(ref);
      let json = cache.get(ref);
      if (json === undefined) {
        json = (await readVerified(ref, hex))?.json;
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
