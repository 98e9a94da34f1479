import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv } from '../../activities/sandbox/sandbox';
import { initKeyFile } from '../../crypto/key-file';
import { keyRingFromEnv, type KeyRing } from '../../crypto/keyring';
import { commitAttempt, CORPUS_FAILING_TEST, CORPUS_FILES, gateTests } from '../gate/corpus-repo';

/**
 * The gate keeps base's test results, with what base's tests printed, in
 * LOOPWRIGHT_HOME/cache/test-results. With a key ring they are sealed like transcripts: what the
 * tests printed is not on disk in clear, the file is 0600, and a cache in clear from before
 * encryption was turned on is replaced. Real repository, real sandbox, real `node --test`.
 */
const mark = `LWMARK-${randomBytes(8).toString('hex')}`;
let dir: string;
let ring: KeyRing;
const home = process.env.LOOPWRIGHT_HOME;

beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-results-cache-');
  ring = keyRingFromEnv({ LOOPWRIGHT_KEYS: initKeyFile(path.join(dir, 'keys')).file })!;
});
afterAll(() => {
  if (home === undefined) delete process.env.LOOPWRIGHT_HOME;
  else process.env.LOOPWRIGHT_HOME = home;
  rmSync(dir, { recursive: true, force: true });
});

/** The gate on a fresh repository whose base tests print `mark`, with its own LOOPWRIGHT_HOME; returns the cache files. */
async function gate(name: string, keys: KeyRing | undefined) {
  const root = path.join(dir, name);
  const loopwrightHome = path.join(dir, `${name}-home`);
  process.env.LOOPWRIGHT_HOME = loopwrightHome;
  const testFile = CORPUS_FILES['test/math.test.js']!.replace(
    "test('multiply",
    `console.log('${mark}');\n\ntest('multiply`,
  );
  const { base, commit } = commitAttempt(
    root,
    { ...CORPUS_FILES, 'test/math.test.js': testFile },
    {
      'src/math.js': CORPUS_FILES['src/math.js']!.replace('a - b', 'a + b'),
      'test/add.test.js':
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../src/math');\ntest('add adds negatives', () => assert.strictEqual(add(-2, -3), -5));\n",
    },
  );
  const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
  const check = async (ringNow = keys) =>
    gateTests(
      `results-cache-${name}`,
      root,
      { base, commit },
      { command: 'node --test', failingTest: CORPUS_FAILING_TEST },
      sandbox,
      ringNow,
    );
  const first = await check();
  const folder = path.join(loopwrightHome, 'cache', 'test-results');
  const files = () => readdirSync(folder).map((f) => path.join(folder, f));
  return { first, files, check };
}

test('with a key ring the cached base results are sealed, 0600, and read back', async () => {
  const g = await gate('sealed', ring);
  expect(g.first.passed).toBe(true);
  const [file, ...more] = g.files();
  expect(more).toEqual([]);
  const bytes = readFileSync(file!);
  expect(bytes.subarray(0, 11).toString()).toBe('lwsealed:1:');
  expect(bytes.includes(mark)).toBe(false);
  expect(bytes.includes(CORPUS_FAILING_TEST)).toBe(false);
  expect(statSync(file!).mode & 0o777).toBe(0o600);
  const mtime = statSync(file!).mtimeMs;
  const second = await g.check();
  expect(second.passed).toBe(true);
  expect(second.reason).toBe(g.first.reason);
  expect(statSync(file!).mtimeMs).toBe(mtime);
});

test('without a key ring they are in clear (the control: the mark is findable), and a ring later replaces them sealed', async () => {
  const g = await gate('clear', undefined);
  expect(g.first.passed).toBe(true);
  const [file] = g.files();
  expect(readFileSync(file!).includes(mark)).toBe(true);
  const later = await g.check(ring);
  expect(later.passed).toBe(true);
  const bytes = readFileSync(file!);
  expect(bytes.subarray(0, 11).toString()).toBe('lwsealed:1:');
  expect(bytes.includes(mark)).toBe(false);
  expect(g.files()).toEqual([file]);
});

test('a sealed cache that does not open (another ring) is computed again, not trusted', async () => {
  const g = await gate('other-ring', ring);
  const [file] = g.files();
  const other = keyRingFromEnv({ LOOPWRIGHT_KEYS: initKeyFile(path.join(dir, 'other-keys')).file })!;
  writeFileSync(file!, 'lwsealed:1:nosuchkey\nnot a sealed body');
  const again = await g.check(other);
  expect(again.passed).toBe(true);
  expect(readFileSync(file!).subarray(0, 11).toString()).toBe('lwsealed:1:');
  expect(readFileSync(file!).includes('nosuchkey')).toBe(false);
});
