import type { Payload, PayloadCodec } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { LoopwrightError } from '../common/errors';
import { ENCODING } from './codec';

const td = new TextDecoder();

type History = temporal.api.history.v1.IHistory;

/**
 * Decodes, in place, every payload of a fetched history with `codecs` (the client's, in the
 * order the client applies them), and puts back the message and stack trace of every failure
 * whose common attributes were encoded (`encodeCommonAttributes`), so code that reads the
 * history raw (the trace, `regression add`) sees what the run saw. Payloads that are not
 * encrypted (runs from before encryption) pass through; a payload whose key is not in the ring
 * throws the codec's KeyMissingError, and an encrypted one read without a ring says to set
 * LOOPWRIGHT_KEYS. Returns the history.
 */
export async function decodeHistory<H extends History>(history: H, codecs: readonly PayloadCodec[]): Promise<H> {
  await walk(history, (payloads) => decodePayloads(payloads, codecs));
  return history;
}

/**
 * Encodes, in place, every payload of a history a process without codecs fetched, as `codecs`
 * would have encoded it when written (search attributes and the core's marker details stay in
 * clear: the SDK never runs them through a codec). The bench uses it to weigh a run's history
 * sealed with a key ring; a test uses it to list what a real encrypted run sealed.
 */
export async function encodeHistory<H extends History>(history: H, codecs: readonly PayloadCodec[]): Promise<H> {
  await walk(history, async (payloads) => {
    let out = payloads;
    for (const codec of codecs) out = await codec.encode(out);
    return out;
  });
  return history;
}

type Transform = (payloads: Payload[]) => Promise<Payload[]>;

async function decodePayloads(payloads: Payload[], codecs: readonly PayloadCodec[]): Promise<Payload[]> {
  let out = payloads;
  for (const codec of [...codecs].reverse()) out = await codec.decode(out);
  const sealed = out.find((p) => td.decode(p.metadata?.encoding ?? new Uint8Array()) === ENCODING);
  if (sealed) {
    const keyId = td.decode(sealed.metadata?.['encryption-key-id'] ?? new Uint8Array());
    throw new LoopwrightError(
      `this run is encrypted (key ${keyId}) and this process has no key ring: set LOOPWRIGHT_KEYS to the ring that holds ${keyId}`,
    );
  }
  return out;
}

function isPayload(v: unknown): v is Payload {
  const m = (v as { metadata?: unknown } | null)?.metadata;
  return typeof m === 'object' && m !== null && (m as Record<string, unknown>).encoding instanceof Uint8Array;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) && !ArrayBuffer.isView(v);
}

/** Post-order, so a failure's encodedAttributes payload is decoded before it is read. */
async function walk(node: unknown, transform: Transform): Promise<void> {
  if (Array.isArray(node)) {
    if (node.length > 0 && node.every(isPayload)) {
      const decoded = await transform(node as Payload[]);
      node.splice(0, node.length, ...decoded);
      return;
    }
    for (const item of node) await walk(item, transform);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'searchAttributes') continue;
    // The SDK's core writes a marker's details itself, in clear (a local activity's sequence number,
    // type and times), all but the local activity's result, which went through the codec.
    if (key === 'details' && 'markerName' in node && isObject(value)) {
      if (value.result) await walk(value.result, transform);
      continue;
    }
    if (isPayload(value)) node[key] = (await transform([value]))[0];
    else if (isObject(value) || Array.isArray(value)) await walk(value, transform);
  }
  if (isPayload(node.encodedAttributes)) restoreAttributes(node);
}

/** What DefaultFailureConverter does with encodedAttributes: message and stack trace back in place. */
function restoreAttributes(failure: Record<string, unknown>): void {
  try {
    const attrs = defaultPayloadConverter.fromPayload<{ message?: unknown; stack_trace?: unknown }>(
      failure.encodedAttributes as Payload,
    );
    if (typeof attrs?.message === 'string') failure.message = attrs.message;
    if (typeof attrs?.stack_trace === 'string') failure.stackTrace = attrs.stack_trace;
  } catch {
    // not the expected shape: leave the failure as it is
  }
}
