import { ConfigError } from '../../common/errors';
import { payloadStoreFromEnv } from '../../crypto/claim-check';
import { keyRingFromEnv, type KeyRing } from '../../crypto/keyring';
import { DEFAULT_CODEC_PORT, isLoopback, startCodecServer, type CodecServer } from '../../crypto/codec-server';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { portOpt as numberOpt } from '../prechecks';
import { untilSignal } from './process';

export interface CodecServerCommandOptions {
  port?: string;
  host?: string;
  /** Repeatable; default the Web UI of `loopwright dev` on its default port. */
  allowOrigin?: string[];
  token?: string;
}

/** The key ring the codec server needs; a ConfigError (exit 2, one line) without one. */
export function requireKeyRing(env: Record<string, string | undefined>, what: string): KeyRing {
  const ring = keyRingFromEnv(env);
  if (!ring)
    throw new ConfigError(
      `${what} needs the key ring and LOOPWRIGHT_KEYS is not set: point it at your key file or folder (\`loopwright keys rotate\` makes one)`,
    );
  return ring;
}

/** Starts the codec server from the command's options and the environment (LOOPWRIGHT_KEYS, LOOPWRIGHT_PAYLOAD_STORE, LOOPWRIGHT_CODEC_TOKEN). */
export function codecServerFromOptions(
  opts: CodecServerCommandOptions,
  env: Record<string, string | undefined>,
): Promise<CodecServer> {
  // The claim check's store alone is enough (payloads in clear in it); else the ring is needed.
  const store = payloadStoreFromEnv(env);
  const ring = store ? keyRingFromEnv(env) : requireKeyRing(env, 'the codec server');
  return startCodecServer({
    ring,
    store,
    port: numberOpt(opts.port) ?? DEFAULT_CODEC_PORT,
    host: opts.host,
    allowOrigins: opts.allowOrigin?.length ? opts.allowOrigin : undefined,
    token: opts.token || env.LOOPWRIGHT_CODEC_TOKEN || undefined,
  });
}

/**
 * `codec-server [--port 8234] [--host 127.0.0.1] [--allow-origin URL]... [--token T]`: Temporal's
 * codec server contract with Loopwright's key ring, so the Web UI (`--ui-codec-endpoint`) and
 * `temporal --codec-endpoint` show decoded payloads. Serves until Ctrl-C.
 */
export async function codecServerCommand(
  opts: CodecServerCommandOptions,
  env: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  const server = await codecServerFromOptions(opts, env);
  const auth = isLoopback(server.host) ? 'this machine only' : `${server.host}, bearer token required`;
  io.out(
    `codec server listening on ${server.url} (${auth}; keys from LOOPWRIGHT_KEYS; browsers allowed from ${server.allowOrigins.join(', ')})`,
  );
  io.out(
    `Web UI: temporal server start-dev --ui-codec-endpoint ${server.url}, or the UI's Data Encoder setting; CLI: temporal workflow show --codec-endpoint ${server.url}${isLoopback(server.host) ? '' : ' --codec-auth "Bearer $LOOPWRIGHT_CODEC_TOKEN"'}`,
  );
  io.err('Ctrl-C stops the codec server.');
  await untilSignal();
  await server.close();
  return 0;
}

/** `codec-server [--port 8234] [--host 127.0.0.1] [--allow-origin URL]... [--token T]`. */
export const codecServerDefinition: CommandDefinition = (program, { action, env, io }) => {
  program
    .command('codec-server')
    .description(
      "Temporal's codec server (POST /encode, /decode) with the LOOPWRIGHT_KEYS key ring, so the Web UI and `temporal --codec-endpoint` show decoded payloads; Ctrl-C stops",
    )
    .option('--port <n>', 'port (0: a free one)', '8234')
    .option('--host <ip>', 'address to bind; beyond localhost it needs a token', '127.0.0.1')
    .option(
      '--allow-origin <url>',
      'a Web UI origin browsers may call it from, repeatable (default http://localhost:8233 and http://127.0.0.1:8233)',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--token <token>',
      'bearer token every request must carry (default LOOPWRIGHT_CODEC_TOKEN); required beyond localhost',
    )
    .action(action((opts) => codecServerCommand(opts, env, io)));
};
