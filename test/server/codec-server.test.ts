/**
 * The codec server over real HTTP: Temporal's contract (`POST /encode`, `POST /decode`, JSON
 * payloads with base64 bytes), CORS for the Web UI's origin only, the bearer token beyond
 * localhost, and the refusals of `loopwright codec-server` (no key ring, no token).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newKey, parseKeyFile, type KeyRing } from '../../crypto/keyring';
import { runCli, startCli } from '../helpers/cli';
import { DEFAULT_UI_ORIGINS, startCodecServer, type CodecServer } from '../../crypto/codec-server';

const UI = 'http://localhost:8233';
const MARKER = 'codec-marker-7f3a hunter2';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

let ring: KeyRing;
let keyFile: string;
let server: CodecServer | undefined;

beforeAll(() => {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopwright-codec-'));
  keyFile = path.join(dir, 'keys');
  writeFileSync(keyFile, `k1=${newKey()}\nk2=${newKey()}\n`, { mode: 0o600 });
  ring = parseKeyFile(`k1=${newKey()}\nk2=${newKey()}\n`, 'test ring');
});

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const jsonPayload = { metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify({ task: MARKER })) };

describe('the codec server', () => {
  test('encodes and decodes payloads in the contract JSON shape, and the encoded form holds none of the plaintext', async () => {
    server = await startCodecServer({ ring, port: 0 });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const enc = await post(`${server.url}/encode`, { payloads: [jsonPayload] });
    expect(enc.status).toBe(200);
    expect(enc.headers.get('content-type')).toMatch(/^application\/json/);
    const encoded = (await enc.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(encoded.payloads).toHaveLength(1);
    expect(unb64(encoded.payloads[0]!.metadata.encoding!)).toBe('binary/encrypted');
    expect(unb64(encoded.payloads[0]!.metadata['encryption-key-id']!)).toBe('k2');
    expect(unb64(encoded.payloads[0]!.data)).not.toContain('codec-marker');

    // The Temporal CLI's `{namespace}` template puts the namespace in the path.
    const dec = await post(`${server.url}/default/decode`, encoded);
    expect(dec.status).toBe(200);
    const decoded = (await dec.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(decoded).toEqual({ payloads: [jsonPayload] });
    expect(JSON.parse(unb64(decoded.payloads[0]!.data))).toEqual({ task: MARKER });

    // Protobuf JSON leaves out an empty list: `{}` (as the Temporal CLI sends it) is no payloads.
    expect(await (await post(`${server.url}/decode`, {})).json()).toEqual({ payloads: [] });

    // Unencrypted payloads (runs from before encryption) come back as they went in.
    const plain = await post(`${server.url}/decode`, { payloads: [jsonPayload] });
    expect(await plain.json()).toEqual({ payloads: [jsonPayload] });
  });

  test('answers bad requests with a clear 4xx and a one-line error', async () => {
    server = await startCodecServer({ ring, port: 0, maxBodyBytes: 4096 });
    const cases: [Promise<Response>, number, RegExp][] = [
      [post(`${server.url}/decode`, '{not json'), 400, /the body is not JSON/],
      [post(`${server.url}/decode`, { payloads: [{ data: 'not base64!' }] }), 400, /payloads\.0\.data: must be base64/],
      [post(`${server.url}/decode`, { payload: [] }), 400, /\(body\): Unrecognized key: "payload"/],
      [post(`${server.url}/decode`, [jsonPayload]), 400, /\(body\): Invalid input: expected object, received array/],
      [
        post(`${server.url}/decode`, { payloads: [jsonPayload] }, { 'Content-Type': 'text/plain' }),
        415,
        /send application\/json/,
      ],
      [post(`${server.url}/decode`, { payloads: [{ data: 'A'.repeat(8000) }] }), 413, /over 4096 bytes/],
      [fetch(`${server.url}/decode`), 405, /use POST/],
      [post(`${server.url}/elsewhere`, {}), 404, /POST \/encode or \/decode/],
      // Ciphertext under a key the ring does not hold: which key, and what to do.
      [
        post(`${server.url}/decode`, {
          payloads: [
            {
              metadata: { encoding: b64('binary/encrypted'), 'encryption-key-id': b64('lost') },
              data: b64('x'.repeat(40)),
            },
          ],
        }),
        422,
        /key lost is not in the key ring/,
      ],
    ];
    for (const [pending, status, message] of cases) {
      const res = await pending;
      const body = (await res.json()) as { error: string };
      expect([res.status, body.error]).toEqual([status, expect.stringMatching(message)]);
      expect(body.error).not.toContain('\n');
    }
  });

  test("lets the Web UI's origin in (preflight and POST) and refuses any other origin", async () => {
    server = await startCodecServer({ ring, port: 0 });
    expect(server.allowOrigins).toEqual(DEFAULT_UI_ORIGINS);
    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(
      expect.stringContaining('x-namespace'),
    );
    const ok = await post(`${server.url}/decode`, { payloads: [jsonPayload] }, { Origin: 'http://127.0.0.1:8233' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');

    for (const origin of ['http://evil.example', 'http://localhost:8234', 'null']) {
      const pre = await fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
      });
      expect(pre.status).toBe(403);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      const res = await post(`${server.url}/decode`, { payloads: [jsonPayload] }, { Origin: origin });
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(((await res.json()) as { error: string }).error).toContain(`origin ${origin} is not allowed`);
    }

    await server.close();
    server = await startCodecServer({ ring, port: 0, allowOrigins: ['https://temporal.example.com'] });
    expect(
      (await post(`${server.url}/decode`, { payloads: [] }, { Origin: 'https://temporal.example.com' })).headers.get(
        'access-control-allow-origin',
      ),
    ).toBe('https://temporal.example.com');
    expect((await post(`${server.url}/decode`, { payloads: [] }, { Origin: UI })).status).toBe(403);
  });

  test('beyond localhost it requires the bearer token on every encode and decode, and checks it', async () => {
    const token = 'a-long-enough-codec-token-0123456789';
    server = await startCodecServer({ ring, port: 0, host: '0.0.0.0', token });
    const url = `http://127.0.0.1:${server.port}`;
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${token}x`, token, `Basic ${token}`]) {
      const res = await post(`${url}/decode`, { payloads: [jsonPayload] }, auth ? { Authorization: auth } : {});
      expect([auth, res.status]).toEqual([auth, 401]);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    const ok = await post(`${url}/encode`, { payloads: [jsonPayload] }, { Authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    // The preflight carries no credentials; it is answered for the UI's origin, and the POST is still checked.
    expect(
      (
        await fetch(`${url}/decode`, {
          method: 'OPTIONS',
          headers: { Origin: UI, 'Access-Control-Request-Method': 'POST' },
        })
      ).status,
    ).toBe(204);

    await expect(startCodecServer({ ring, port: 0, host: '0.0.0.0' })).rejects.toThrow(
      /binding 0\.0\.0\.0 \(beyond localhost\) needs a bearer token/,
    );
    await expect(startCodecServer({ ring, port: 0, host: '0.0.0.0', token: 'short' })).rejects.toThrow(/at least 16/);
  });

  test('`loopwright codec-server` refuses to start without a key ring, or beyond localhost without a token, in one line (exit 2)', async () => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME };
    // Set empty: no ring, whatever the suite's or this home's.
    const noKeys = await runCli(['codec-server', '--port', '0'], { ...env, LOOPWRIGHT_KEYS: '' });
    expect([noKeys.code, noKeys.stdout, noKeys.stderr]).toEqual([
      2,
      '',
      expect.stringMatching(/^error: the codec server needs the key ring and LOOPWRIGHT_KEYS is not set: [^\n]*\n$/),
    ]);
    const noToken = await runCli(['codec-server', '--port', '0', '--host', '0.0.0.0'], {
      ...env,
      LOOPWRIGHT_KEYS: keyFile,
    });
    expect([noToken.code, noToken.stdout, noToken.stderr]).toEqual([
      2,
      '',
      expect.stringMatching(
        /^error: .*binding 0\.0\.0\.0 \(beyond localhost\) needs a bearer token: set LOOPWRIGHT_CODEC_TOKEN or --token\n$/,
      ),
    ]);
    const badOrigin = await runCli(['codec-server', '--port', '0', '--allow-origin', 'localhost:8233'], {
      ...env,
      LOOPWRIGHT_KEYS: keyFile,
    });
    expect([badOrigin.code, badOrigin.stderr]).toEqual([
      2,
      expect.stringMatching(
        /^error: --allow-origin localhost:8233 is not an origin: give scheme:\/\/host\[:port\][^\n]*\n$/,
      ),
    ]);
  });

  test('`loopwright codec-server` serves the key ring of LOOPWRIGHT_KEYS with the token of LOOPWRIGHT_CODEC_TOKEN until Ctrl-C', async () => {
    const token = 'env-token-0123456789abcdef';
    const cli = startCli(['codec-server', '--port', '0', '--host', '0.0.0.0'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOOPWRIGHT_KEYS: keyFile,
      LOOPWRIGHT_CODEC_TOKEN: token,
    });
    try {
      const url = (await cli.waitFor(/codec server listening on http:\/\/127\.0\.0\.1:\d+/, 30_000)).split(' ').at(-1)!;
      expect(cli.output()).toContain('bearer token required');
      expect(cli.output()).not.toContain(token);
      expect((await post(`${url}/encode`, { payloads: [jsonPayload] })).status).toBe(401);
      const enc = await post(`${url}/encode`, { payloads: [jsonPayload] }, { Authorization: `Bearer ${token}` });
      const dec = await post(`${url}/decode`, await enc.json(), { Authorization: `Bearer ${token}` });
      expect(await dec.json()).toEqual({ payloads: [jsonPayload] });
    } finally {
      expect(await cli.stop('SIGINT')).toBe(0);
    }
  });
});
