import { defaultKeysPath, initKeyFile, keysLocation, readRingAt, rotateRing } from '../../crypto/key-file';
import type { CommandDefinition } from '../cli-command';

/**
 * `keys init | rotate | list`: the key ring every client and worker encrypts payloads with when
 * LOOPWRIGHT_KEYS names it. No command prints key material.
 */
export const keysDefinition: CommandDefinition = (program, { action: run, io, env }) => {
  const keys = program
    .command('keys')
    .description('the key ring LOOPWRIGHT_KEYS names (payload encryption): init, rotate, list');
  keys
    .command('init')
    .description('create a key file with one new key (mode 0600); an existing file is never overwritten')
    .option('--file <path>', 'where (default LOOPWRIGHT_KEYS, else <LOOPWRIGHT_HOME>/keys)')
    .action(
      run(async (opts: { file?: string }) => {
        const { file, keyId } = initKeyFile(opts.file ?? keysLocation(env));
        io.out(`created ${file} with key ${keyId} (current)`);
        if (env.LOOPWRIGHT_KEYS === undefined && file === defaultKeysPath(env))
          io.out(
            '  encryption is on for every client and worker with this LOOPWRIGHT_HOME (LOOPWRIGHT_KEYS is unset, so they read this file); elsewhere set LOOPWRIGHT_KEYS to a copy',
          );
        else if (env.LOOPWRIGHT_KEYS?.trim() !== file)
          io.out(
            `  encryption is on where LOOPWRIGHT_KEYS names it: export LOOPWRIGHT_KEYS=${file} for every client and worker`,
          );
        io.out(
          '  back it up now (a password manager or secret store): runs encrypted with a lost key cannot be read again',
        );
        return 0;
      }),
    );
  keys
    .command('rotate')
    .description('add a new current key to the ring; old keys stay so older runs stay readable')
    .option('--json', 'machine-readable output')
    .action(
      run(async (opts: { json?: boolean }) => {
        const where = keysLocation(env);
        const rotated = rotateRing(where);
        if (opts.json)
          io.out(
            JSON.stringify({ ring: where, current: rotated.keyId, previous: rotated.previous, keys: rotated.keys }),
          );
        else {
          io.out(`${where}: new current key ${rotated.keyId} (was ${rotated.previous}; ${rotated.keys} keys)`);
          io.out(
            '  restart workers and clients to encrypt with it; copy the ring to every worker and back it up again',
          );
        }
        return 0;
      }),
    );
  keys
    .command('list')
    .description('the ids in the ring and which is current (never the keys)')
    .option('--json', 'machine-readable output')
    .action(
      run(async (opts: { json?: boolean }) => {
        const ring = readRingAt(keysLocation(env));
        const ids = [...ring.keys.keys()];
        if (opts.json) io.out(JSON.stringify({ ring: ring.source, current: ring.current, keys: ids }));
        else {
          const off = env.LOOPWRIGHT_KEYS !== undefined && !env.LOOPWRIGHT_KEYS.trim();
          io.out(ring.source + (off ? ' (LOOPWRIGHT_KEYS is set empty: runs are not encrypted)' : ''));
          for (const id of ids) io.out(`  ${id}${id === ring.current ? '  current' : ''}`);
        }
        return 0;
      }),
    );
};
