import { deflateRawSync, gunzipSync, inflateRawSync } from 'node:zlib';
import { type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Redaction } from '../common/redact';
import { DisplayRedactionCodec } from './display-codec';
import { CiphertextError, KeyMissingError, NO_RING, open, seal, type KeyRing } from './keyring';

/** The module of the failure converter an encrypting worker's workflow bundle is built with (`failureConverterPath`). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

/**
 * The first byte of what is sealed says how the payload inside is written: its protobuf
 * encoding (`Payload` of Temporal's API), as is or raw-deflated. Envelopes sealed before this
 * format (JSON of base64 metadata and data, gzipped from 1 KB and marked `compressed: gzip`)
 * begin with `{` or are gzip, and still decode (test/crypto/fixtures/envelope-v1.json).
 */
const PROTO = 0x01;
const PROTO_DEFLATED = 0x02;
const JSON_ENVELOPE = 0x7b; // '{'
/** Below this the payload is sealed as is: deflate has nothing to find in a few dozen bytes. */
const COMPRESS_FROM = 64;

/** `payload` as the sealed plaintext: its protobuf encoding, deflated when that is smaller. */
function envelope(payload: Payload): Buffer {
  const proto = temporal.api.common.v1.Payload.encode(payload).finish();
  if (proto.length >= COMPRESS_FROM) {
    const deflated = deflateRawSync(proto);
    if (deflated.length < proto.length) return Buffer.concat([Buffer.of(PROTO_DEFLATED), deflated]);
  }
  return Buffer.concat([Buffer.of(PROTO), proto]);
}

/** The payload sealed in `plain`, in either format ({@link envelope}, or the first one's JSON). */
function unenvelope(plain: Buffer, gzipped: boolean, keyId: string): Payload {
  const fromProto = (bytes: Uint8Array): Payload => {
    const p = temporal.api.common.v1.Payload.decode(bytes);
    return { metadata: p.metadata, data: p.data };
  };
  if (gzipped) plain = gunzipSync(plain);
  switch (plain[0]) {
    case PROTO:
      return fromProto(plain.subarray(1));
    case PROTO_DEFLATED:
      return fromProto(inflateRawSync(plain.subarray(1)));
    case JSON_ENVELOPE: {
      const inner = JSON.parse(td.decode(plain)) as { metadata: Record<string, string>; data: string };
      return {
        metadata: Object.fromEntries(Object.entries(inner.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
        data: Buffer.from(inner.data, 'base64'),
      };
    }
    default:
      throw new CiphertextError(
        `a payload under key ${keyId} holds an envelope this version does not know (format byte ${plain[0]}): upgrade Loopwright`,
      );
  }
}

export const ENCODING = 'binary/encrypted';
const te = new TextEncoder();
const td = new TextDecoder();

/**
 * Temporal's payload codec for Loopwright: every payload becomes `binary/encrypted` with the
 * key id in its metadata (`encryption-key-id`); the data is the whole original payload (metadata
 * and data, see {@link envelope}) sealed with AES-256-GCM. Decoding uses whichever key the payload names, so runs started before a key
 * rotation stay readable; payloads that are not encrypted (runs from before encryption) pass
 * through unchanged.
 */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly ring: KeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const { keyId, sealed } = seal(this.ring, envelope(p));
      return { metadata: { encoding: te.encode(ENCODING), 'encryption-key-id': te.encode(keyId) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (td.decode(p.metadata?.encoding ?? new Uint8Array()) !== ENCODING) return p;
      const keyId = td.decode(p.metadata?.['encryption-key-id'] ?? new Uint8Array());
      const gzipped = td.decode(p.metadata?.compressed ?? new Uint8Array()) === 'gzip';
      return unenvelope(open(this.ring, keyId, p.data ?? new Uint8Array()), gzipped, keyId);
    });
  }
}

/**
 * The codec of a process without a key ring: payloads go out in clear, and an encrypted payload
 * that comes back (a run a keyed worker wrote, a failure it encoded) fails with the
 * {@link KeyMissingError} that names its key and says to set `LOOPWRIGHT_KEYS`, instead of
 * Temporal's "Unknown encoding: binary/encrypted".
 */
export class NoKeysCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    for (const p of payloads) {
      if (td.decode(p.metadata?.encoding ?? new Uint8Array()) === ENCODING)
        throw new KeyMissingError(td.decode(p.metadata?.['encryption-key-id'] ?? new Uint8Array()), NO_RING);
    }
    return payloads;
  }
}

/**
 * The client side of the data converter every Loopwright client uses: with a key ring, the
 * encryption codec, and failure messages and stack traces encoded too (`encodeCommonAttributes`);
 * without one, payloads in clear and a clear error for encrypted ones ({@link NoKeysCodec}).
 */
export function clientDataConverter(ring: KeyRing | undefined): DataConverter {
  return ring
    ? { payloadCodecs: [new EncryptionCodec(ring)], failureConverterPath: FAILURE_CONVERTER_PATH }
    : { payloadCodecs: [new NoKeysCodec()] };
}

/**
 * The data converter every Loopwright worker uses: first the display codec (strings workflow code
 * marked for the Web UI are redacted with the worker's own `redaction`, see crypto/display-codec.ts),
 * then, with a key ring, the encryption codec and the encoding failure converter (the worker must
 * then load the workflow bundle built with it, see workers/workflow-bundle.ts).
 */
export function workerDataConverter(ring: KeyRing | undefined, redaction: Redaction): DataConverter {
  const display = new DisplayRedactionCodec(redaction);
  return ring
    ? { payloadCodecs: [display, new EncryptionCodec(ring)], failureConverterPath: FAILURE_CONVERTER_PATH }
    : { payloadCodecs: [display, new NoKeysCodec()] };
}
