import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readFile, utimes } from 'node:fs/promises';
import path from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ConfigError } from '../common/errors';
import { writeFileAtomically } from '../server/atomic-file';

/**
 * The claim check (opt-in, `LOOPWRIGHT_PAYLOAD_STORE`): every payload of at least
 * {@link CLAIM_CHECK_MIN_BYTES} is kept in a content-addressed store of files, and the history
 * holds only its SHA-256 (`binary/claim-check`, 32 bytes). It is the last codec, so with a key
 * ring what is stored is the sealed payload. A run's start input (its loop spec), its model
 * calls' inputs and results and its record leave the history this way: the benchmark's run goes
 * from about 11.9 KB of history to about 5.9 KB.
 *
 * What it gives up: the history alone is no longer the whole trace. Every worker and client of
 * the namespace (and the codec server, for the Web UI) must read the same store, which must be
 * kept (and backed up) as long as the histories that name it. Decoding checks each file's hash,
 * so a changed file is refused, never read as something else. Off by default: the history stays
 * the trace. See the README's "Performance" section.
 */

/** The encoding of a claim-checked payload. */
export const CLAIM_CHECK_ENCODING = 'binary/claim-check';

/** Payloads smaller than this (encoded) stay in the history: a claim check costs about 60 bytes. */
export const CLAIM_CHECK_MIN_BYTES = 256;

const te = new TextEncoder();
const td = new TextDecoder();

/**
 * A claim-checked payload this process cannot read: no store set, its file missing or changed.
 * Like a missing key (crypto/keyring.ts), a setting or a backup to restore: exit 2, one line.
 */
export class ClaimCheckError extends ConfigError {}

/** The store of claim-checked payloads: one file per payload, named by its SHA-256, under two-hex-digit folders. */
export class PayloadStore {
  constructor(readonly dir: string) {}

  private file(hash: string): string {
    return path.join(this.dir, hash.slice(0, 2), hash);
  }

  /**
   * Keeps `bytes` under `hash`, durably (written to a temporary file, synced, renamed, the folder
   * synced) before the payload that names it can reach the server. A file that is there already
   * has its mtime set to now, so a store pruned by age keeps what recent runs still name. All of
   * it asynchronous: a worker's codec runs on its main thread, beside every activity's heartbeats.
   */
  async put(hash: string, bytes: Uint8Array): Promise<void> {
    const file = this.file(hash);
    const now = new Date();
    if (
      await utimes(file, now, now).then(
        () => true,
        () => false,
      )
    )
      return;
    await writeFileAtomically(file, bytes, { mode: 0o600, folderMode: 0o700, syncFolder: true });
  }

  /**
   * The bytes kept under `hash`; a ClaimCheckError when the file is missing or does not hash to
   * it. A read moves its mtime to now too (best effort): a schedule's start input is written once
   * and read by every run it starts, so a store pruned by age keeps it while the schedule fires.
   */
  async get(hash: string): Promise<Uint8Array> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.file(hash));
      const now = new Date();
      await utimes(this.file(hash), now, now).catch(() => undefined);
    } catch (err) {
      throw new ClaimCheckError(
        `payload ${hash} is not in the payload store ${this.dir} (${(err as NodeJS.ErrnoException).code ?? String(err)}): give this process the store the run's workers write (LOOPWRIGHT_PAYLOAD_STORE), or restore it from a backup`,
      );
    }
    if (sha256(bytes) !== hash)
      throw new ClaimCheckError(
        `payload ${hash} in the payload store ${this.dir} was changed (its content no longer has that hash): restore the file from a backup`,
      );
    return bytes;
  }
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Temporal's payload codec for the claim check: a payload of at least `minBytes` (the whole
 * Payload message, metadata included) goes to the store; what comes back as a claim check is
 * read from it and checked. Payloads in the history (small ones, runs from before) pass through.
 */
export class ClaimCheckCodec implements PayloadCodec {
  constructor(
    readonly store: PayloadStore,
    private readonly minBytes = CLAIM_CHECK_MIN_BYTES,
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (p) => {
        const bytes = temporal.api.common.v1.Payload.encode(p).finish();
        if (bytes.length < this.minBytes) return p;
        const hash = sha256(bytes);
        await this.store.put(hash, bytes);
        return { metadata: { encoding: te.encode(CLAIM_CHECK_ENCODING) }, data: Buffer.from(hash, 'hex') };
      }),
    );
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (p) => {
        if (td.decode(p.metadata?.encoding ?? new Uint8Array()) !== CLAIM_CHECK_ENCODING) return p;
        const hash = Buffer.from(p.data ?? new Uint8Array()).toString('hex');
        if (hash.length !== 64)
          throw new ClaimCheckError(
            `a claim-checked payload holds ${hash.length / 2} bytes, not a SHA-256: it was not written by Loopwright`,
          );
        const decoded = temporal.api.common.v1.Payload.decode(await this.store.get(hash));
        return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array() } as Payload;
      }),
    );
  }
}

/**
 * The payload codec without a store: a claim check that comes back (a run whose workers keep
 * one) fails with a line that names the setting, instead of Temporal's "Unknown encoding".
 */
export class NoPayloadStoreCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const p of payloads)
      if (td.decode(p.metadata?.encoding ?? new Uint8Array()) === CLAIM_CHECK_ENCODING)
        throw new ClaimCheckError(
          `payload ${Buffer.from(p.data ?? new Uint8Array()).toString('hex')} is claim-checked (its workers keep payloads in a store): set LOOPWRIGHT_PAYLOAD_STORE to the folder they write`,
        );
    return payloads;
  }
}

/**
 * `LOOPWRIGHT_PAYLOAD_STORE`: unset or empty is no store (payloads stay in the history); else an
 * absolute folder, made (0700) when missing. Anything else is a ConfigError (exit 2).
 */
export function payloadStoreFromEnv(env: Record<string, string | undefined>): PayloadStore | undefined {
  const raw = env.LOOPWRIGHT_PAYLOAD_STORE?.trim() ?? '';
  if (raw === '') return undefined;
  if (!path.isAbsolute(raw))
    throw new ConfigError(
      `LOOPWRIGHT_PAYLOAD_STORE is ${JSON.stringify(raw)}, not an absolute path: give the absolute folder every worker and client of the namespace shares, or unset it to keep payloads in the history`,
    );
  try {
    // A folder it makes is the worker's own (0700); an existing one keeps the mode it was given.
    mkdirSync(raw, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new ConfigError(
      `LOOPWRIGHT_PAYLOAD_STORE names ${raw}, which cannot be made a folder (${(err as NodeJS.ErrnoException).code ?? String(err)}): give a folder this process may write, or unset it`,
    );
  }
  return new PayloadStore(raw);
}

/** The codec for `store`: the claim check, or the clear refusal of claim checks without one. */
export function claimCheckCodec(store: PayloadStore | undefined): PayloadCodec {
  return store ? new ClaimCheckCodec(store) : new NoPayloadStoreCodec();
}
