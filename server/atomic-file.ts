import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes `file` whole or not at all: `data` goes to a temporary file beside it (`wx`, `mode`),
 * is synced, and is renamed over `file`, so a crash never leaves a named but empty or cut file
 * (the temporary file is removed when a step fails). Its folder is made if missing; with
 * `syncFolder` it is synced after the rename too, so the name itself survives a power loss.
 */
export async function writeFileAtomically(
  file: string,
  data: string | Uint8Array,
  opts: { mode?: number; folderMode?: number; syncFolder?: boolean } = {},
): Promise<void> {
  const folder = path.dirname(file);
  await mkdir(folder, { recursive: true, ...(opts.folderMode !== undefined ? { mode: opts.folderMode } : {}) });
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(tmp, 'wx', opts.mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  if (!opts.syncFolder) return;
  const dir = await open(folder, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
