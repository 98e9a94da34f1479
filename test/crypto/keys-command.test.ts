import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { keyRingFromEnv } from '../../crypto/keyring';
import { runCli } from '../helpers/cli';

/** The built CLI's `keys init | rotate | list` on a temporary LOOPWRIGHT_HOME: files, modes, and no key material printed. */
let home: string;

beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), 'lw-keys-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

async function cli(
  env: Record<string, string | undefined>,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const r = await runCli(args, { PATH: process.env.PATH, LOOPWRIGHT_KEYS: undefined, ...env });
  return { code: r.code ?? -1, out: r.stdout.trimEnd(), err: r.stderr.trimEnd() };
}

const materialOf = (file: string) =>
  [...keyRingFromEnv({ LOOPWRIGHT_KEYS: file })!.keys.values()].map((k) => k.toString('base64'));

test('init makes <LOOPWRIGHT_HOME>/keys with one current key, mode 0600, and refuses to overwrite it', async () => {
  const env = { LOOPWRIGHT_HOME: home };
  const made = await cli(env, 'keys', 'init');
  const file = path.join(home, 'keys');
  expect(made.code).toBe(0);
  expect(made.out).toContain(`created ${file}`);
  expect(made.out).toContain('encryption is on for every client and worker with this LOOPWRIGHT_HOME');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  // LOOPWRIGHT_KEYS unset reads this file; set empty turns encryption off.
  expect(keyRingFromEnv({ LOOPWRIGHT_HOME: home })?.source).toBe(file);
  expect(keyRingFromEnv({ LOOPWRIGHT_HOME: home, LOOPWRIGHT_KEYS: '' })).toBeUndefined();
  expect(keyRingFromEnv({ LOOPWRIGHT_HOME: path.join(home, 'nothing-here') })).toBeUndefined();
  const ring = keyRingFromEnv({ LOOPWRIGHT_KEYS: file })!;
  expect(ring.keys.size).toBe(1);
  const before = readFileSync(file, 'utf8');
  const again = await cli(env, 'keys', 'init');
  expect(again.code).toBe(2);
  expect(again.err).toMatch(/already exists: it is kept/);
  expect(readFileSync(file, 'utf8')).toBe(before);
  for (const key of materialOf(file)) expect(made.out + again.err).not.toContain(key);
});

test('rotate adds a new current key to the ring LOOPWRIGHT_KEYS names and keeps the old; list shows ids only', async () => {
  const file = path.join(home, 'elsewhere', 'ring');
  const env = { LOOPWRIGHT_HOME: home, LOOPWRIGHT_KEYS: file };
  expect((await cli(env, 'keys', 'rotate')).err).toMatch(/no key ring at .*: create one with `loopwright keys init`/);
  expect((await cli(env, 'keys', 'init')).code).toBe(0);
  const old = keyRingFromEnv(env)!;
  const rotated = await cli(env, 'keys', 'rotate', '--json');
  expect(rotated.code).toBe(0);
  const { current, previous, keys } = JSON.parse(rotated.out) as { current: string; previous: string; keys: number };
  expect({ previous, keys }).toEqual({ previous: old.current, keys: 2 });
  const ring = keyRingFromEnv(env)!;
  expect(ring.current).toBe(current);
  expect(ring.keys.get(old.current)).toEqual(old.keys.get(old.current));
  expect(statSync(file).mode & 0o777).toBe(0o600);
  // a second rotation within the same second still gets an id of its own
  expect((await cli(env, 'keys', 'rotate')).code).toBe(0);
  expect(keyRingFromEnv(env)!.keys.size).toBe(3);

  const listed = await cli(env, 'keys', 'list');
  expect(listed.out).toContain(`  ${keyRingFromEnv(env)!.current}  current`);
  expect(listed.out).toContain(`  ${old.current}`);
  for (const key of materialOf(file)) expect(listed.out + rotated.out).not.toContain(key);
});

test('rotate works on a ring directory too: a new <id>.key and its current file', async () => {
  const ringDir = path.join(home, 'ring.d');
  mkdirSync(ringDir);
  writeFileSync(path.join(ringDir, 'a.key'), `${Buffer.alloc(32, 1).toString('base64')}\n`);
  const env = { LOOPWRIGHT_KEYS: ringDir };
  const rotated = await cli(env, 'keys', 'rotate', '--json');
  const { current } = JSON.parse(rotated.out) as { current: string };
  expect(readFileSync(path.join(ringDir, 'current'), 'utf8').trim()).toBe(current);
  expect([...keyRingFromEnv(env)!.keys.keys()].sort()).toEqual(['a', current].sort());
});
