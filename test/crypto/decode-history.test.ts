import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter, DefaultFailureConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { EncryptionCodec } from '../../crypto/codec';
import { decodeHistory } from '../../crypto/decode-history';
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
