import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../common/errors';
import {
  describeConnection,
  isSecured,
  temporalConnectionOptions,
  withoutConnectionSettings,
} from '../../server/temporal-connection';

/**
 * The TLS and API-key options every worker and client connects with, built from Temporal's own
 * environment variables (TEMPORAL_TLS_*, TEMPORAL_API_KEY); bad values are one ConfigError naming
 * the variable. test/cluster/tls.test.ts proves them against a real mTLS frontend.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-tls-options-'));
const pemFile = (name: string, label: string) => {
  const file = path.join(dir, name);
  writeFileSync(file, `-----BEGIN ${label}-----\n${name}\n-----END ${label}-----\n`);
  return file;
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cert = pemFile('client.pem', 'CERTIFICATE');
const key = pemFile('client.key', 'PRIVATE KEY');
const ca = pemFile('ca.pem', 'CERTIFICATE');

const refusal = (env: Record<string, string>): string => {
  try {
    temporalConnectionOptions(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
};

test('nothing set: no options, a plain TCP connection as to the dev server and npm run cluster', () => {
  const o = temporalConnectionOptions({ TEMPORAL_ADDRESS: 'localhost:7233', TEMPORAL_TLS_CLIENT_CERT_PATH: '  ' });
  expect(o).toEqual({});
  expect(isSecured(o)).toBe(false);
  expect(describeConnection(o)).toBe('plain TCP');
});

test('a client certificate, key, CA and server name make an mTLS config with the files read', () => {
  const o = temporalConnectionOptions({
    TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: key,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca,
    TEMPORAL_TLS_SERVER_NAME: 'temporal',
  });
  expect(o.apiKey).toBeUndefined();
  expect(o.tls).toEqual({
    serverNameOverride: 'temporal',
    serverRootCACertificate: Buffer.from('-----BEGIN CERTIFICATE-----\nca.pem\n-----END CERTIFICATE-----\n'),
    clientCertPair: {
      crt: Buffer.from('-----BEGIN CERTIFICATE-----\nclient.pem\n-----END CERTIFICATE-----\n'),
      key: Buffer.from('-----BEGIN PRIVATE KEY-----\nclient.key\n-----END PRIVATE KEY-----\n'),
    },
  });
  expect(describeConnection(o)).toBe('mTLS');
});

test('PEM given inline in the _DATA variables is used as is', () => {
  const data = '-----BEGIN CERTIFICATE-----\ninline\n-----END CERTIFICATE-----';
  const o = temporalConnectionOptions({ TEMPORAL_TLS_SERVER_CA_CERT_DATA: data });
  expect(o.tls).toEqual({ serverRootCACertificate: Buffer.from(data) });
  expect(describeConnection(o)).toBe('TLS');
});

test('an API key turns TLS on with the system roots (Temporal Cloud), unless TEMPORAL_TLS=false', () => {
  expect(temporalConnectionOptions({ TEMPORAL_API_KEY: 'k.e.y' })).toEqual({ apiKey: 'k.e.y', tls: true });
  // TLS off said explicitly: the SDK turns it on for an API key unless told not to.
  expect(temporalConnectionOptions({ TEMPORAL_API_KEY: 'k.e.y', TEMPORAL_TLS: 'false' })).toEqual({
    apiKey: 'k.e.y',
    tls: false,
  });
  expect(temporalConnectionOptions({ TEMPORAL_TLS: 'false' })).toEqual({});
  expect(describeConnection({ apiKey: 'k', tls: false })).toBe('API key');
  expect(temporalConnectionOptions({ TEMPORAL_TLS: 'TRUE' })).toEqual({ tls: true });
  expect(describeConnection({ apiKey: 'k', tls: true })).toBe('TLS + API key');
});

test.each([
  [
    { TEMPORAL_TLS_CLIENT_CERT_PATH: cert },
    /TEMPORAL_TLS_CLIENT_CERT_PATH is set without TEMPORAL_TLS_CLIENT_KEY_PATH/,
  ],
  [{ TEMPORAL_TLS_CLIENT_KEY_PATH: key }, /TEMPORAL_TLS_CLIENT_KEY_PATH is set without TEMPORAL_TLS_CLIENT_CERT_PATH/],
  [
    { TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'none.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: key },
    /TEMPORAL_TLS_CLIENT_CERT_PATH .*none\.pem cannot be read \(no such file\)/,
  ],
  [{ TEMPORAL_TLS_SERVER_CA_CERT_PATH: dir }, /TEMPORAL_TLS_SERVER_CA_CERT_PATH .* cannot be read/],
  [{ TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'not pem' }, /TEMPORAL_TLS_SERVER_CA_CERT_DATA is not PEM/],
  [
    { TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca, TEMPORAL_TLS_SERVER_CA_CERT_DATA: '-----BEGIN CERTIFICATE-----' },
    /_PATH and TEMPORAL_TLS_SERVER_CA_CERT_DATA are both set/,
  ],
  [{ TEMPORAL_TLS: 'yes' }, /TEMPORAL_TLS "yes" is not valid: give true or false/],
  [{ TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_NAME: 'temporal' }, /TEMPORAL_TLS=false but a TLS certificate/],
  [{ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }, /not supported by the TypeScript SDK/],
  [{ TEMPORAL_API_KEY: 'two words' }, /TEMPORAL_API_KEY contains a space/],
] as Array<[Record<string, string>, RegExp]>)('refuses %j with one line naming the variable', (env, message) => {
  const text = refusal(env);
  expect(text).toMatch(message);
  expect(text).not.toContain('\n');
});

test('a text file that is not PEM is refused as such, and the message never shows an API key', () => {
  const notPem = path.join(dir, 'notes.txt');
  writeFileSync(notPem, 'hello');
  expect(
    refusal({ TEMPORAL_TLS_CLIENT_CERT_PATH: notPem, TEMPORAL_TLS_CLIENT_KEY_PATH: key, TEMPORAL_API_KEY: 'secret' }),
  ).toMatch(/^TEMPORAL_TLS_CLIENT_CERT_PATH .*notes\.txt is not PEM/);
  expect(refusal({ TEMPORAL_API_KEY: 'sec ret' })).not.toContain('sec ret');
});

test('a process talking to its own local server (dev, the demo) drops the connection variables and keeps the rest', () => {
  const env = {
    TEMPORAL_API_KEY: 'cloud-key',
    TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
    PATH: '/bin',
    TEMPORAL_NAMESPACE: 'x',
  };
  const plain = withoutConnectionSettings(env);
  expect(plain).toEqual({ PATH: '/bin', TEMPORAL_NAMESPACE: 'x' });
  expect(temporalConnectionOptions(plain)).toEqual({});
  // The original is left as it was.
  expect(env.TEMPORAL_API_KEY).toBe('cloud-key');
});
