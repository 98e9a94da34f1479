/**
 * How a worker or client reaches a secured Temporal frontend (Temporal Cloud, or a cluster with
 * mTLS or an authorizer): TLS settings and an API key read from the environment, under the names
 * Temporal's own CLI and its SDKs' environment configuration use, so one set of variables serves
 * Loopwright, the `temporal` CLI and deploy/temporal-setup.sh alike.
 */
import { readFileSync, statSync } from 'fs';
import { ConfigError } from '../common/errors';

/** What `Connection.connect` and `NativeConnection.connect` take besides the address. */
export interface TemporalConnectionOptions {
  /**
   * Absent: plain TCP. `false`: plain TCP even with an API key (the SDK turns TLS on for an API key
   * unless told not to). `true`: TLS with the system's roots. An object: mTLS, a CA, a server name.
   */
  tls?:
    | boolean
    | {
        serverNameOverride?: string;
        serverRootCACertificate?: Buffer;
        clientCertPair?: { crt: Buffer; key: Buffer };
      };
  apiKey?: string;
}

/** The variables read, as named by Temporal's environment configuration (docs.temporal.io/references/client-environment-configuration). */
export const TEMPORAL_CONNECTION_VARIABLES = [
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_API_KEY',
] as const;

type Env = Record<string, string | undefined>;

const value = (env: Env, name: string): string | undefined => env[name]?.trim() || undefined;

/** PEM from `<base>_PATH` (a readable file) or `<base>_DATA` (the PEM itself), not both; undefined when neither is set. */
function pem(env: Env, base: string, what: string): Buffer | undefined {
  const file = value(env, `${base}_PATH`);
  const data = value(env, `${base}_DATA`);
  if (file && data)
    throw new ConfigError(`${base}_PATH and ${base}_DATA are both set: give the ${what} one way, unset one of them`);
  if (data) {
    if (!data.includes('-----BEGIN '))
      throw new ConfigError(
        `${base}_DATA is not PEM (no -----BEGIN line): give the ${what} itself, or a file in ${base}_PATH`,
      );
    return Buffer.from(data);
  }
  if (!file) return undefined;
  let text: Buffer;
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
    text = readFileSync(file);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new ConfigError(`${base}_PATH ${file} cannot be read (${why}): point it at the ${what} (PEM) or unset it`);
  }
  if (!text.includes('-----BEGIN '))
    throw new ConfigError(`${base}_PATH ${file} is not PEM (no -----BEGIN line): point it at the ${what}`);
  return text;
}

/**
 * The TLS and API-key options of a connection from `env`, checked before anything connects: a
 * missing or unreadable file, a certificate without its key (or a key without its certificate),
 * a setting given both as `_PATH` and `_DATA`, or a TEMPORAL_TLS that is not true/false is a
 * ConfigError (exit 2) naming the variable. As in Temporal's environment configuration, any TLS
 * setting or an API key turns TLS on, and TEMPORAL_TLS=false turns it off (refused together with
 * a certificate). TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=true is refused: the TypeScript SDK has
 * no such switch; set TEMPORAL_TLS_SERVER_NAME to the name the server's certificate carries instead.
 * Nothing set: no options (plain TCP, as for the dev server and `npm run cluster`).
 */
export function temporalConnectionOptions(env: Env): TemporalConnectionOptions {
  const tlsFlag = value(env, 'TEMPORAL_TLS')?.toLowerCase();
  if (tlsFlag !== undefined && tlsFlag !== 'true' && tlsFlag !== 'false')
    throw new ConfigError(`TEMPORAL_TLS "${tlsFlag.slice(0, 20)}" is not valid: give true or false`);
  if (value(env, 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION')?.toLowerCase() === 'true')
    throw new ConfigError(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=true is not supported by the TypeScript SDK: set TEMPORAL_TLS_SERVER_NAME to the name in the server certificate instead',
    );
  const crt = pem(env, 'TEMPORAL_TLS_CLIENT_CERT', 'client certificate');
  const key = pem(env, 'TEMPORAL_TLS_CLIENT_KEY', 'client private key');
  if (crt && !key)
    throw new ConfigError(
      'TEMPORAL_TLS_CLIENT_CERT_PATH is set without TEMPORAL_TLS_CLIENT_KEY_PATH: give the client key too (mTLS needs both)',
    );
  if (key && !crt)
    throw new ConfigError(
      'TEMPORAL_TLS_CLIENT_KEY_PATH is set without TEMPORAL_TLS_CLIENT_CERT_PATH: give the client certificate too (mTLS needs both)',
    );
  const ca = pem(env, 'TEMPORAL_TLS_SERVER_CA_CERT', 'CA certificate of the server');
  const serverName = value(env, 'TEMPORAL_TLS_SERVER_NAME');
  const apiKey = value(env, 'TEMPORAL_API_KEY');
  if (apiKey && /[\s\u0000-\u001f\u007f]/.test(apiKey))
    throw new ConfigError(
      'TEMPORAL_API_KEY contains a space or control character: give the key on one line, as issued',
    );
  const anyTls = crt !== undefined || ca !== undefined || serverName !== undefined;
  if (tlsFlag === 'false' && anyTls)
    throw new ConfigError(
      'TEMPORAL_TLS=false but a TLS certificate or server name is set: unset TEMPORAL_TLS, or the TEMPORAL_TLS_* settings',
    );
  const options: TemporalConnectionOptions = {};
  if (apiKey) options.apiKey = apiKey;
  if (tlsFlag === 'false') {
    // Said explicitly: the SDK would turn TLS on for an API key.
    if (apiKey) options.tls = false;
    return options;
  }
  if (anyTls) {
    options.tls = {
      ...(serverName ? { serverNameOverride: serverName } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
    };
  } else if (tlsFlag === 'true' || apiKey) options.tls = true;
  return options;
}

/**
 * `env` without the connection variables: for a process that talks to a server it started itself
 * on 127.0.0.1 (`dev`, the demo, their Temporal CLI calls), where a developer's TEMPORAL_API_KEY or
 * TEMPORAL_TLS_* for Temporal Cloud would only turn on TLS the local server does not speak.
 */
export function withoutConnectionSettings<T extends Record<string, string | undefined>>(env: T): T {
  const out = { ...env };
  for (const name of TEMPORAL_CONNECTION_VARIABLES) delete out[name];
  return out;
}

/** True when the connection uses TLS or an API key (a refusal is then more likely those than a server that is down). */
export function isSecured(o: TemporalConnectionOptions): boolean {
  return Boolean(o.tls) || o.apiKey !== undefined;
}

/** One line for a log: how the connection is secured, never a secret. */
export function describeConnection(o: TemporalConnectionOptions): string {
  const parts: string[] = [];
  if (o.tls === true) parts.push('TLS');
  else if (o.tls) parts.push(o.tls.clientCertPair ? 'mTLS' : 'TLS');
  if (o.apiKey) parts.push('API key');
  return parts.length ? parts.join(' + ') : 'plain TCP';
}
