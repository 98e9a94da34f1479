import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Payload } from '@temporalio/common';
import { encode, decode } from '@temporalio/common/lib/internal-non-workflow/codec-helpers';
import {
  CLAIM_CHECK_ENCODING,
  ClaimCheckCodec,
  ClaimCheckError,
  NoPayloadStoreCodec,
  PayloadStore,
  payloadStoreFromEnv,
} from '../../crypto/claim-check';
import { clientDataConverter, workerDataConverter } from '../../crypto/codec';
import { startCodecServer } from '../../crypto/codec-server';
import { newKey, parseKeyFile } from '../../crypto/keyring';
import { ConfigError } from '../../common/errors';
import { mustTake } from '../../common/must';

const te = new TextEncoder();
const json = (value: unknown): Payload => ({
  metadata: { encoding: te.encode('json/plain') },
  data: te.encode(JSON.stringify(value)),
});
const small = json({ state: 'running' });
// Random enough that a key ring's deflated, sealed envelope of it is still over the threshold.
const SPEC = `You are a careful worker. ${randomBytes(300).toString('hex')}`;
const large = json({ loop: 'evaluate-optimize', systemPrompt: SPEC });

let dir: string;
let store: PayloadStore;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'lw-claim-check-'));
  store = new PayloadStore(path.join(dir, 'store'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Every file the store holds (not the folders), by name. */
const files = (): string[] =>
  existsSync(store.dir)
    ? readdirSync(store.dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => e.name)
    : [];

describe('the claim check', () => {
  test('a payload of 256 bytes or more goes to the store as its SHA-256, and comes back exactly; a smaller one stays in the history', async () => {
    const codec = new ClaimCheckCodec(store);
    const [kept, checked] = mustTake(await codec.encode([small, large]), 2, 'two in, two out');
    expect(kept).toEqual(small);
    expect(new TextDecoder().decode(checked.metadata!.encoding)).toBe(CLAIM_CHECK_ENCODING);
    expect(checked.data).toHaveLength(32);
    const hash = Buffer.from(checked.data!).toString('hex');
    expect(files()).toEqual([hash]);
    // What the history holds is small; what the store holds is the whole payload.
    expect(readFileSync(path.join(store.dir, hash.slice(0, 2), hash), 'utf8')).toContain('careful worker');
    expect(await codec.decode([kept, checked])).toEqual([small, large]);
  });

  test('the same payload twice is one file, its mtime moved to now by the write and by a read (a store pruned by age keeps what runs still name)', async () => {
    const codec = new ClaimCheckCodec(store);
    const [first] = mustTake(await codec.encode([large]), 1, 'one');
    const hash = Buffer.from(first.data!).toString('hex');
    const file = path.join(store.dir, hash.slice(0, 2), hash);
    utimesSync(file, new Date('2020-01-01'), new Date('2020-01-01'));
    const [again] = mustTake(await codec.encode([large]), 1, 'one');
    expect(again).toEqual(first);
    expect(files()).toEqual([hash]);
    expect(statSync(file).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
    // A read moves it too (a schedule's start input is written once and read by every run it starts).
    utimesSync(file, new Date('2020-01-01'), new Date('2020-01-01'));
    expect(await codec.decode([again])).toEqual([large]);
    expect(statSync(file).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
  });

  test('a changed or missing file is refused with one line that says what to do (exit 2), never read as something else', async () => {
    const codec = new ClaimCheckCodec(store);
    const [checked] = mustTake(await codec.encode([large]), 1, 'one');
    const hash = Buffer.from(checked.data!).toString('hex');
    const file = path.join(store.dir, hash.slice(0, 2), hash);
    const bytes = readFileSync(file);
    writeFileSync(file, Buffer.from(bytes.toString('latin1').replace('careful', 'careless'), 'latin1'));
    const changed = await codec.decode([checked]).catch((e: unknown) => e);
    expect(changed).toBeInstanceOf(ClaimCheckError);
    expect((changed as ClaimCheckError).exitCode).toBe(2);
    expect((changed as Error).message).toBe(
      `payload ${hash} in the payload store ${store.dir} was changed (its content no longer has that hash): restore the file from a backup`,
    );
    rmSync(file);
    const missing = await codec.decode([checked]).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as Error).message).toMatch(
      new RegExp(
        `^payload ${hash} is not in the payload store .* \\(ENOENT\\): give this process the store the run's workers write \\(LOOPWRIGHT_PAYLOAD_STORE\\), or restore it from a backup$`,
      ),
    );
  });

  test('a process without a store passes payloads through and refuses a claim check with a line naming LOOPWRIGHT_PAYLOAD_STORE', async () => {
    const [checked] = mustTake(await new ClaimCheckCodec(store).encode([large]), 1, 'one');
    const none = new NoPayloadStoreCodec();
    expect(await none.encode([small, large])).toEqual([small, large]);
    expect(await none.decode([small])).toEqual([small]);
    const err = await none.decode([small, checked]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /^payload [0-9a-f]{64} is claim-checked \(its workers keep payloads in a store\): set LOOPWRIGHT_PAYLOAD_STORE to the folder they write$/,
    );
  });

  test('last in the data converters: with a key ring the store holds sealed payloads, and a client reads what a worker wrote', async () => {
    const ring = parseKeyFile(`k1=${newKey()}`, 'keys.txt');
    const worker = workerDataConverter(ring, { names: [], values: [] }, store).payloadCodecs!;
    const client = clientDataConverter(ring, store).payloadCodecs!;
    expect(worker.at(-1)).toBeInstanceOf(ClaimCheckCodec);
    expect(client.at(-1)).toBeInstanceOf(ClaimCheckCodec);
    const [checked] = mustTake(await encode(worker, [large]), 1, 'one');
    expect(new TextDecoder().decode(checked.metadata!.encoding)).toBe(CLAIM_CHECK_ENCODING);
    const [stored] = files();
    expect(readFileSync(path.join(store.dir, stored!.slice(0, 2), stored!), 'latin1')).not.toContain('careful');
    expect(await decode(client, [checked])).toEqual([large]);
    // Without the store setting, the client says what to set.
    await expect(decode(clientDataConverter(ring).payloadCodecs!, [checked])).rejects.toThrow(
      /LOOPWRIGHT_PAYLOAD_STORE/,
    );
  });

  test('LOOPWRIGHT_PAYLOAD_STORE: unset is none; a relative path is a ConfigError; a missing folder is made, 0700', () => {
    expect(payloadStoreFromEnv({})).toBeUndefined();
    expect(payloadStoreFromEnv({ LOOPWRIGHT_PAYLOAD_STORE: '  ' })).toBeUndefined();
    expect(() => payloadStoreFromEnv({ LOOPWRIGHT_PAYLOAD_STORE: 'payloads' })).toThrow(ConfigError);
    expect(() => payloadStoreFromEnv({ LOOPWRIGHT_PAYLOAD_STORE: 'payloads' })).toThrow(
      'LOOPWRIGHT_PAYLOAD_STORE is "payloads", not an absolute path: give the absolute folder every worker and client of the namespace shares, or unset it to keep payloads in the history',
    );
    const made = path.join(dir, 'a', 'b');
    expect(payloadStoreFromEnv({ LOOPWRIGHT_PAYLOAD_STORE: made })?.dir).toBe(made);
    expect(statSync(made).mode & 0o777).toBe(0o700);
    writeFileSync(path.join(dir, 'file'), '');
    expect(() => payloadStoreFromEnv({ LOOPWRIGHT_PAYLOAD_STORE: path.join(dir, 'file', 'x') })).toThrow(
      /cannot be made a folder \(ENOTDIR\)/,
    );
  });

  test('the codec server decodes claim checks with the store alone (no key ring), for the Web UI', async () => {
    const [checked] = mustTake(await new ClaimCheckCodec(store).encode([large]), 1, 'one');
    const server = await startCodecServer({ store, port: 0 });
    try {
      const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
      const res = await fetch(`${server.url}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          payloads: [{ metadata: { encoding: b64(checked.metadata!.encoding!) }, data: b64(checked.data!) }],
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { payloads: Array<{ data: string }> };
      expect(Buffer.from(body.payloads[0]!.data, 'base64').toString()).toContain('careful worker');
    } finally {
      await server.close();
    }
    await expect(startCodecServer({ port: 0 })).rejects.toThrow('needs a key ring or a payload store');
  });
});
