import { type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import type { Redaction } from '../common/redact';
import { claimCheckCodec, type PayloadStore } from './claim-check';
import { DisplayRedactionCodec } from './display-codec';
import { envelope, unenvelope } from './envelope';
import { KeyMissingError, NO_RING, open, seal, type KeyRing } from './keyring';

/** The module of the failure converter an encrypting worker's workflow bundle is built with (`failureConverterPath`). */
export const FAILURE_CONVERTER_PATH = require.resolve('./failure-converter');

export const ENCODING = 'binary/encrypted';
const te = new TextEncoder();
const td = new TextDecoder();

/**
 * Temporal's payload codec for Loopwright: every payload becomes `binary/encrypted` with the
 * key id in its metadata (`encryption-key-id`); the data is the whole original payload (metadata
 * and data, in the ring's seal format: crypto/envelope.ts) sealed with AES-256-GCM. Decoding uses
 * whichever key the payload names, so runs started before a key rotation stay readable, reads
 * either format, and passes payloads that are not encrypted (runs from before encryption) through.
 */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly ring: KeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const { plain, gzipped } = envelope(p, this.ring.sealFormat ?? 2);
      const { keyId, sealed } = seal(this.ring, plain);
      return {
        metadata: {
          encoding: te.encode(ENCODING),
          'encryption-key-id': te.encode(keyId),
          ...(gzipped ? { compressed: te.encode('gzip') } : {}),
        },
        data: sealed,
      };
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
 * without one, payloads in clear and a clear error for encrypted ones ({@link NoKeysCodec}). Last,
 * the claim check (crypto/claim-check.ts) when `store` is given, else a clear error for claim checks.
 */
export function clientDataConverter(ring: KeyRing | undefined, store?: PayloadStore): DataConverter {
  const last = claimCheckCodec(store);
  return ring
    ? { payloadCodecs: [new EncryptionCodec(ring), last], failureConverterPath: FAILURE_CONVERTER_PATH }
    : { payloadCodecs: [new NoKeysCodec(), last] };
}

/**
 * The data converter every Loopwright worker uses: first the display codec (strings workflow code
 * marked for the Web UI are redacted with the worker's own `redaction`, see crypto/display-codec.ts),
 * then, with a key ring, the encryption codec and the encoding failure converter (the worker must
 * then load the workflow bundle built with it, see workers/workflow-bundle.ts), and last the
 * claim check as for clients.
 */
export function workerDataConverter(
  ring: KeyRing | undefined,
  redaction: Redaction,
  store?: PayloadStore,
): DataConverter {
  const display = new DisplayRedactionCodec(redaction);
  const last = claimCheckCodec(store);
  return ring
    ? { payloadCodecs: [display, new EncryptionCodec(ring), last], failureConverterPath: FAILURE_CONVERTER_PATH }
    : { payloadCodecs: [display, new NoKeysCodec(), last] };
}
