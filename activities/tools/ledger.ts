import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { KeyRing } from '../../crypto/keyring';
import { isSealed, openFile, sealFile } from '../sealed-file';

/**
 * What a tool call did, kept by its idempotency key (`<workflow id>/<activity id>`, the same for
 * every retry of one activity), so a retry after a lost worker answers as the first try did
 * instead of doing the work again: a finished call's outcome, and an edit's intent (the file's
 * hash before and after) written before the file is. Keyed records only; nothing lists them.
 */
export interface ToolLedger {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
}

/** How long a record is kept: far longer than any retry of its activity. */
const KEEP_MS = 7 * 24 * 3600 * 1000;

/**
 * A ledger in a directory of the worker's (`<dir>/<sha256(key)>.json`, beside the transcript
 * store, never inside a workspace or the sandbox), each record written to a temp file and renamed
 * into place, and sealed with the operator's key ring when there is one (records hold tool
 * output). About once in 200 writes, records older than 7 days are removed.
 */
export function createFileLedger(dir: string, ring?: KeyRing): ToolLedger {
  const file = (key: string) => path.join(dir, `${createHash('sha256').update(key).digest('hex')}.json`);
  return {
    async get<T>(key: string): Promise<T | undefined> {
      let bytes: Buffer;
      try {
        bytes = await readFile(file(key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      const json = isSealed(bytes)
        ? openFile(ring, bytes, key, `tool ledger record ${key}`).toString('utf8')
        : bytes.toString('utf8');
      const record = JSON.parse(json) as { key: string; value: T };
      return record.key === key ? record.value : undefined;
    },
    async put(key: string, value: unknown): Promise<void> {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const json = JSON.stringify({ key, value });
      const target = file(key);
      const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
      await writeFile(temp, ring ? sealFile(ring, json, key) : json, { mode: 0o600 });
      await rename(temp, target);
      if (Math.random() < 0.005) void prune(dir);
    },
  };
}

async function prune(dir: string): Promise<void> {
  const cutoff = Date.now() - KEEP_MS;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const at = path.join(dir, name);
    const st = await stat(at).catch(() => undefined);
    if (st && st.mtimeMs < cutoff) await rm(at, { force: true }).catch(() => undefined);
  }
}
