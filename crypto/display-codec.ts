import type { Payload, PayloadCodec } from '@temporalio/common';
import { DISPLAY_MARK, redact, type Redaction } from '../common/redact';

const te = new TextEncoder();
const td = new TextDecoder();
/** The mark as it stands in a `json/plain` payload's bytes (JSON does not escape it). */
const MARK = Buffer.from(DISPLAY_MARK, 'utf8');

/**
 * The worker's first payload codec: a string that workflow code marked for display (see
 * DISPLAY_MARK in common/redact.ts: activity and timer summaries, current details, a child's
 * summary) is redacted with the worker's own redaction, the literal values of every variable of
 * its environment but the allow-list's and the names in LOOPWRIGHT_REDACT, which workflow code
 * cannot see; the mark is dropped. It runs before the encryption codec, so the Web UI, through the
 * codec server, shows the redacted text. Every other payload passes through untouched (a path or
 * value that happens to equal a variable must not change what an activity gets); a payload is
 * parsed only when it holds the mark. Decoding changes nothing.
 */
export class DisplayRedactionCodec implements PayloadCodec {
  constructor(private readonly redaction: Redaction) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.redactOne(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  private redactOne(p: Payload): Payload {
    const data = p.data;
    if (
      !data ||
      td.decode(p.metadata?.encoding ?? new Uint8Array()) !== 'json/plain' ||
      Buffer.from(data.buffer, data.byteOffset, data.byteLength).indexOf(MARK) < 0
    )
      return p;
    let value: unknown;
    try {
      value = JSON.parse(td.decode(data));
    } catch {
      return p;
    }
    return { ...p, data: te.encode(JSON.stringify(this.walk(value))) };
  }

  private walk(value: unknown): unknown {
    if (typeof value === 'string')
      return value.startsWith(DISPLAY_MARK) ? redact(value.slice(DISPLAY_MARK.length), this.redaction) : value;
    if (Array.isArray(value)) return value.map((v) => this.walk(v));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.walk(v)]));
    return value;
  }
}
