import { clientDataConverter, EncryptionCodec, NoKeysCodec } from '../../crypto/codec';
import { ConfigError } from '../../common/errors';
import { KeyMissingError, newKey, parseKeyFile } from '../../crypto/keyring';
import { mustTake } from '../../common/must';

const te = new TextEncoder();
const plain = { metadata: { encoding: te.encode('json/plain') }, data: te.encode('{"a":1}') };

describe('a process without a key ring', () => {
  test('sends payloads in clear and passes clear ones through', async () => {
    const codec = new NoKeysCodec();
    expect(await codec.encode([plain])).toEqual([plain]);
    expect(await codec.decode([plain])).toEqual([plain]);
    expect(clientDataConverter(undefined).payloadCodecs?.[0]).toBeInstanceOf(NoKeysCodec);
  });

  test("fails on an encrypted payload with the KeyMissingError naming its key and LOOPWRIGHT_KEYS (a ConfigError: exit 2), not Temporal's 'Unknown encoding'", async () => {
    const [sealed] = mustTake(
      await new EncryptionCodec(parseKeyFile(`k7=${newKey()}`, 'keys.txt')).encode([plain]),
      1,
      'one payload in, one out',
    );
    const err = await new NoKeysCodec().decode([plain, sealed]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyMissingError);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as KeyMissingError).exitCode).toBe(2);
    expect((err as Error).message).toBe(
      'key k7 is not in the key ring (none: LOOPWRIGHT_KEYS is not set in this process): this data was encrypted with it; set LOOPWRIGHT_KEYS to the key ring the workers use (see README "Secrets at rest")',
    );
  });
});
