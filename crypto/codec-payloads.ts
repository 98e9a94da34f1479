import type { Payload } from '@temporalio/common';
import { z } from 'zod';

/** Standard or URL-safe base64, as protobuf JSON (the Web UI, the Temporal CLI) writes bytes. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const Base64Schema = z.string().regex(BASE64, 'must be base64');

/** One payload as Temporal's codec server contract carries it: bytes as base64 (protobuf JSON). */
export const JsonPayloadSchema = z.object({
  metadata: z.record(z.string(), Base64Schema).nullish(),
  data: Base64Schema.nullish(),
});

/**
 * The body of `POST /encode` and `POST /decode`, and of their answers: `{ payloads: [...] }`.
 * Protobuf JSON leaves an empty list out, so `{}` is no payloads (the Temporal CLI sends it for
 * every event without any); a field the contract does not have is an error.
 */
export const CodecBodySchema = z.strictObject({
  payloads: z
    .array(JsonPayloadSchema)
    .nullish()
    .transform((p) => p ?? []),
});

export type JsonPayload = z.infer<typeof JsonPayloadSchema>;
export type CodecBody = z.infer<typeof CodecBodySchema>;

/** A payload from its JSON form. */
export function fromJson({ metadata, data }: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(data ?? '', 'base64'),
  };
}

/** The JSON form of a payload (standard base64). */
export function toJson({ metadata, data }: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(data ?? new Uint8Array()).toString('base64'),
  };
}

/** `path: message` lines for a body that is not the contract's shape. */
export function shapeProblems(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}
