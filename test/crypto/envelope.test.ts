import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deflateRawSync, gunzipSync, gzipSync } from 'node:zlib';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { EncryptionCodec } from '../../crypto/codec';
import { MAX_INFLATED_BYTES } from '../../crypto/envelope';
import { ConfigError } from '../../common/errors';
import {
  CiphertextError,
  keyRingFromEnv,
  newKey,
  open,
  parseKeyFile,
  seal,
  sealFormatFromEnv,
} from '../../crypto/keyring';
import fixture from './fixtures/envelope-v1.json';

const te = new TextEncoder();
const ring = parseKeyFile(`k1=${newKey()}`, 'keys.txt');
const codec = new EncryptionCodec(ring);
const b64 = (s: string) => Buffer.from(s, 'base64');

/** A run record of the benchmark's shape: what the codec seals most of. */
const record = {
  workflowId: 'bench-1',
  state: 'completed',
  attempts: [1, 2].map((n) => ({
    n,
    candidate: 'The worker crashes\nhistory replays each event\nthe loop carries on',
    verdicts: [{ check: 'judge', kind: 'judge', passed: n === 2, reason: 'no crash in it', failedItems: [] }],
    usage: { inputTokens: 150, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.0007 },
  })),
  pendingReview: null,
  decision: null,
  escalation: null,
};

describe('the sealed envelope', () => {
  test('payloads sealed by the first format (JSON envelope, gzip from 1 KB) still decode to what was sealed', async () => {
    const old = parseKeyFile(fixture.keyFile, 'fixture');
    const sealed: Payload[] = fixture.sealed.map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, b64(v)])),
      data: b64(p.data),
    }));
    expect(sealed.map((p) => Object.keys(p.metadata ?? {}).includes('compressed'))).toEqual([false, true]);
    const opened = await new EncryptionCodec(old).decode(sealed);
    expect(opened.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual(fixture.values);
  });

  test.each([
    ['a small JSON payload', defaultPayloadConverter.toPayload({ task: 'fix it' })],
    ['a run record', defaultPayloadConverter.toPayload(record)],
    [
      'binary data with extra metadata',
      {
        metadata: { encoding: te.encode('binary/plain'), x: te.encode('y') },
        data: Buffer.from([0, 1, 0x7b, 0x1f, 0x8b, 255]),
      },
    ],
    ['a payload with no data (undefined)', { metadata: { encoding: te.encode('binary/null') } }],
  ])('%s comes back byte for byte', async (_, payload: Payload) => {
    const [sealed] = await codec.encode([payload]);
    expect(Object.keys(sealed!.metadata!)).toEqual(['encoding', 'encryption-key-id']);
    const [back] = await codec.decode([sealed!]);
    expect(Buffer.from(back!.data ?? [])).toEqual(Buffer.from(payload.data ?? []));
    expect(Object.fromEntries(Object.entries(back!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString()]))).toEqual(
      Object.fromEntries(Object.entries(payload.metadata!).map(([k, v]) => [k, Buffer.from(v).toString()])),
    );
  });

  test('a sealed payload is its protobuf encoding plus the nonce, the tag and one byte at most, and a record shrinks below its clear JSON', async () => {
    for (const value of [{ a: 1 }, { task: 'x'.repeat(40) }, record]) {
      const payload = defaultPayloadConverter.toPayload(value);
      const proto = temporal.api.common.v1.Payload.encode(payload).finish().length;
      const [sealed] = await codec.encode([payload]);
      expect(sealed!.data!.length).toBeLessThanOrEqual(proto + 1 + 12 + 16);
    }
    const clear = defaultPayloadConverter.toPayload(record);
    const [sealed] = await codec.encode([clear]);
    const size = (p: Payload) => temporal.api.common.v1.Payload.encode(p).finish().length;
    expect(size(sealed!)).toBeLessThan(size(clear));
  });

  test('an envelope of a format this version does not know fails with a CiphertextError that says to upgrade', async () => {
    const { keyId, sealed } = seal(ring, Buffer.from([0x09, 1, 2, 3]));
    const payload = {
      metadata: { encoding: te.encode('binary/encrypted'), 'encryption-key-id': te.encode(keyId) },
      data: sealed,
    };
    const err = await codec.decode([payload]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CiphertextError);
    expect((err as Error).message).toBe(
      'a payload under key k1 holds an envelope this version does not know (format byte 9): upgrade Loopwright',
    );
  });
});

/** How 6215409 and the versions before it opened a sealed payload: JSON of base64 fields, gzipped when marked. */
function openAsBefore(sealed: Payload): Payload {
  const keyId = Buffer.from(sealed.metadata!['encryption-key-id']!).toString();
  let plain = open(ring, keyId, sealed.data!);
  if (Buffer.from(sealed.metadata!.compressed ?? []).toString() === 'gzip') plain = gunzipSync(plain);
  const inner = JSON.parse(plain.toString()) as { metadata: Record<string, string>; data: string };
  return {
    metadata: Object.fromEntries(Object.entries(inner.metadata).map(([k, v]) => [k, b64(v)])),
    data: b64(inner.data),
  };
}

describe('LOOPWRIGHT_SEAL_FORMAT=1, for a rolling upgrade', () => {
  const old = new EncryptionCodec({ ...ring, sealFormat: 1 });

  test('seals what versions before format 2 open, gzipped and marked from 1 KB, and this version reads it too', async () => {
    const values = [{ task: 'fix it' }, record, { big: 'x'.repeat(2000) }];
    const sealed = await old.encode(values.map((v) => defaultPayloadConverter.toPayload(v)));
    expect(sealed.map((p) => Object.keys(p.metadata!).includes('compressed'))).toEqual([false, false, true]);
    expect(sealed.map((p) => defaultPayloadConverter.fromPayload(openAsBefore(p)))).toEqual(values);
    expect((await codec.decode(sealed)).map((p) => defaultPayloadConverter.fromPayload(p))).toEqual(values);
  });

  test('is read from the environment: unset or 2 is format 2, 1 is format 1, anything else is a ConfigError (exit 2) that says what to set', () => {
    expect(sealFormatFromEnv({})).toBe(2);
    expect(sealFormatFromEnv({ LOOPWRIGHT_SEAL_FORMAT: '2' })).toBe(2);
    expect(sealFormatFromEnv({ LOOPWRIGHT_SEAL_FORMAT: ' 1 ' })).toBe(1);
    const err = (() => {
      try {
        return sealFormatFromEnv({ LOOPWRIGHT_SEAL_FORMAT: 'v1' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as Error).message).toBe(
      'LOOPWRIGHT_SEAL_FORMAT is "v1": set 1 while processes of a Loopwright version before sealed format 2 still run, else leave it unset (2)',
    );
  });

  test('a key ring read from the environment carries the format, so every codec made with it seals that way', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lw-seal-'));
    try {
      const file = path.join(dir, 'keys');
      writeFileSync(file, `k1=${newKey()}\n`);
      expect(keyRingFromEnv({ LOOPWRIGHT_KEYS: file })?.sealFormat).toBe(2);
      expect(keyRingFromEnv({ LOOPWRIGHT_KEYS: file, LOOPWRIGHT_SEAL_FORMAT: '1' })?.sealFormat).toBe(1);
      expect(() => keyRingFromEnv({ LOOPWRIGHT_KEYS: '', LOOPWRIGHT_SEAL_FORMAT: '3' })).toThrow(ConfigError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test('a crafted payload that inflates past the limit (a deflate bomb sealed with the key) fails with a CiphertextError, not the memory of the process', async () => {
  const bomb = deflateRawSync(Buffer.alloc(MAX_INFLATED_BYTES + 1024));
  for (const [plain, compressed] of [
    [Buffer.concat([Buffer.of(0x02), bomb]), false],
    [gzipSync(Buffer.alloc(MAX_INFLATED_BYTES + 1024, 0x7b)), true],
  ] as const) {
    const { keyId, sealed } = seal(ring, plain);
    const payload = {
      metadata: {
        encoding: te.encode('binary/encrypted'),
        'encryption-key-id': te.encode(keyId),
        ...(compressed ? { compressed: te.encode('gzip') } : {}),
      },
      data: sealed,
    };
    const err = await codec.decode([payload]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CiphertextError);
    expect((err as Error).message).toMatch(/^a payload under key k1 does not inflate to at most 67108864 bytes: /);
  }
});
