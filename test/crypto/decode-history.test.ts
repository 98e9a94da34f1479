import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter, DefaultFailureConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { EncryptionCodec } from '../../crypto/codec';
import { decodeHistory, encodeHistory } from '../../crypto/decode-history';
import { newKey, parseKeyFile } from '../../crypto/keyring';
import { must } from '../../common/must';

/** decodeHistory, without a server: old histories pass through, encrypted ones read as they ran. */
const ring = parseKeyFile(`a=${newKey()}\n`, 'test ring');
const codec = new EncryptionCodec(ring);
const histories = path.join(__dirname, '..', 'replay', 'histories');
const recorded = (file: string) => historyFromJSON(JSON.parse(readFileSync(path.join(histories, file), 'utf8')));

test.each(readdirSync(histories).filter((f) => f.endsWith('.json')))(
  '%s, recorded before encryption, decodes through the codec unchanged',
  async (file) => {
    const history = recorded(file);
    const before = JSON.stringify(history);
    const decoded = await decodeHistory(history, [codec]);
    expect(JSON.stringify(decoded)).toBe(before);
  },
);

test('an encrypted input and an encoded failure read back in clear; without a ring it says to set LOOPWRIGHT_KEYS', async () => {
  const failure = new DefaultFailureConverter({ encodeCommonAttributes: true }).errorToFailure(
    new Error('judge down: s3cret'),
    defaultPayloadConverter,
  );
  failure.encodedAttributes = (await codec.encode([failure.encodedAttributes!]))[0];
  const history = () => ({
    events: [
      {
        eventId: 1,
        workflowExecutionStartedEventAttributes: {
          input: { payloads: [defaultPayloadConverter.toPayload({ task: 'the task' })] },
        },
      },
      { eventId: 2, activityTaskFailedEventAttributes: { failure: structuredClone(failure) } },
    ],
  });
  const encrypted = history();
  const start = must(encrypted.events[0], 'the history has a start event').workflowExecutionStartedEventAttributes!;
  start.input.payloads = await codec.encode(start.input.payloads);
  expect(failure.message).toBe('Encoded failure');

  const clear = (await decodeHistory(structuredClone(encrypted) as never, [codec])) as typeof encrypted;
  expect(
    defaultPayloadConverter.fromPayload(
      must(
        clear.events[0]?.workflowExecutionStartedEventAttributes?.input.payloads[0],
        'the decoded start has its input',
      ),
    ),
  ).toEqual({ task: 'the task' });
  expect(clear.events[1]?.activityTaskFailedEventAttributes!.failure.message).toBe('judge down: s3cret');
  await expect(decodeHistory(structuredClone(encrypted) as never, [])).rejects.toThrow(
    'this run is encrypted (key a) and this process has no key ring: set LOOPWRIGHT_KEYS',
  );
  await expect(
    decodeHistory(structuredClone(encrypted) as never, [
      new EncryptionCodec(parseKeyFile(`b=${newKey()}\n`, 'other ring')),
    ]),
  ).rejects.toThrow('key a is not in the key ring other ring');
});

test("encodeHistory seals every payload of a recorded run but its search attributes and the core's marker details, and decodeHistory gives the run back", async () => {
  const { History } = temporal.api.history.v1;
  const bytes = (h: temporal.api.history.v1.IHistory) => Buffer.from(History.encode(h).finish());
  const before = bytes(recorded('replay-v2.json'));
  const sealed = await encodeHistory(History.decode(before), [codec]);
  const payloads = (node: unknown, key = ''): Array<{ key: string; encoding: string }> => {
    if (Array.isArray(node)) return node.flatMap((n) => payloads(n, key));
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return [];
    const { metadata } = node as { metadata?: Record<string, Uint8Array> };
    if (metadata?.encoding instanceof Uint8Array) return [{ key, encoding: Buffer.from(metadata.encoding).toString() }];
    // Labels: a search attribute's payloads, and a marker's details but the local activity's result.
    const label = (k: string) =>
      key === 'searchAttributes'
        ? key
        : key === 'marker'
          ? k === 'result'
            ? k
            : key
          : 'markerName' in node && k === 'details'
            ? 'marker'
            : k;
    return Object.entries(node).flatMap(([k, v]) => payloads(v, label(k)));
  };
  const all = payloads(sealed);
  expect(all.filter((p) => p.key !== 'searchAttributes').length).toBeGreaterThan(10);
  // In clear: search attributes, and the marker details core writes (the local activity's result is sealed).
  const clear = (p: { key: string }) => p.key === 'searchAttributes' || p.key === 'marker';
  for (const p of all) expect([p.key, p.encoding]).toEqual([p.key, clear(p) ? 'json/plain' : 'binary/encrypted']);
  expect(all.some((p) => p.key === 'searchAttributes')).toBe(true);
  expect(all.some((p) => p.key === 'marker')).toBe(true);
  expect(bytes(sealed).length).toBeLessThan(before.length);
  expect(bytes(await decodeHistory(sealed, [codec])).equals(before)).toBe(true);
});
