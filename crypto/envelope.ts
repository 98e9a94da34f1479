import { deflateRawSync, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { CiphertextError } from './keyring';

/**
 * How the encryption codec writes a payload before it seals it:
 * - 2 (the default): the first byte says how the rest is written, the payload's protobuf encoding
 *   (`Payload` of Temporal's API) as is, or raw-deflated when that is smaller (from 64 B);
 * - 1 (the format before 2, kept for rolling upgrades, `LOOPWRIGHT_SEAL_FORMAT=1`): JSON of the
 *   base64 metadata and data, gzipped from 1 KB and then marked `compressed: gzip` in the outer
 *   metadata. It begins with `{` (or is gzip), which no format-2 envelope does.
 * Every version that knows format 2 reads both (test/crypto/fixtures/envelope-v1.json).
 */
export type SealFormat = 1 | 2;

const PROTO = 0x01;
const PROTO_DEFLATED = 0x02;
const JSON_ENVELOPE = 0x7b; // '{'
/** Format 2: below this a payload is sealed as is; deflate finds nothing in a few dozen bytes. */
const DEFLATE_FROM = 64;
/** Format 1: payloads at least this large were gzipped. */
const GZIP_FROM = 1024;
/**
 * The most a sealed payload may inflate to. Temporal refuses payloads far smaller (2 MB by
 * default, 4 MB a gRPC message), so only a crafted one (made by someone holding the key) comes
 * near it; it fails instead of taking the memory of the worker or codec server that opens it.
 */
export const MAX_INFLATED_BYTES = 64 * 1024 * 1024;

const td = new TextDecoder();

/** What is sealed for `payload` in `format`, and whether it was gzipped (format 1 says so in the metadata). */
export function envelope(payload: Payload, format: SealFormat): { plain: Buffer; gzipped: boolean } {
  if (format === 1) {
    const json = Buffer.from(
      JSON.stringify({
        metadata: Object.fromEntries(
          Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
        data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
      }),
    );
    return json.length >= GZIP_FROM ? { plain: gzipSync(json), gzipped: true } : { plain: json, gzipped: false };
  }
  const proto = temporal.api.common.v1.Payload.encode(payload).finish();
  if (proto.length >= DEFLATE_FROM) {
    const deflated = deflateRawSync(proto);
    if (deflated.length < proto.length)
      return { plain: Buffer.concat([Buffer.of(PROTO_DEFLATED), deflated]), gzipped: false };
  }
  return { plain: Buffer.concat([Buffer.of(PROTO), proto]), gzipped: false };
}

/** The payload sealed in `plain`, in either format; `keyId` names the key for the error of an unknown one. */
export function unenvelope(plain: Buffer, gzipped: boolean, keyId: string): Payload {
  const fromProto = (bytes: Uint8Array): Payload => {
    const p = temporal.api.common.v1.Payload.decode(bytes);
    return { metadata: p.metadata, data: p.data };
  };
  const inflated = (inflate: () => Buffer): Buffer => {
    try {
      return inflate();
    } catch (err) {
      throw new CiphertextError(
        `a payload under key ${keyId} does not inflate to at most ${MAX_INFLATED_BYTES} bytes: ${(err as Error).message}`,
      );
    }
  };
  const limit = { maxOutputLength: MAX_INFLATED_BYTES };
  if (gzipped) plain = inflated(() => gunzipSync(plain, limit));
  switch (plain[0]) {
    case PROTO:
      return fromProto(plain.subarray(1));
    case PROTO_DEFLATED:
      return fromProto(inflated(() => inflateRawSync(plain.subarray(1), limit)));
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
