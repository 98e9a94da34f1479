import fc from 'fast-check';
import { redact, REDACTED } from '../../common/redact';

/** Redaction is total, idempotent and linear: arbitrary strings, strings built from secret-ish pieces, megabytes. */
const r = { values: ['hunter2-s3cret-Xy', 'Zx9-opaque-value'], names: ['DB_PASSWORD'] };
const pieces = fc.constantFrom(
  'ghp_0123456789abcdefghijABCDEFGHIJ0123',
  'sk-ant-',
  'api03-SECRET0123456789',
  'hunter2-s3cret-Xy',
  '\u200B',
  '\u00AD',
  '%2D',
  '%',
  ' ',
  '\n',
  '-',
  '=',
  ':',
  'token',
  'password=',
  'Bearer ',
  'Basic ',
  'https://u:',
  '@host',
  'aGVsbG8gd29ybGQ=',
  'Z2hwXzAxMjM0NTY3ODlhYmNkZWZnaGlqQUJDREVGR0hJSjAxMjM=',
  'g h p _',
  REDACTED,
  'abc',
  'DB_PASSWORD: ',
);
const mixed = fc
  .array(fc.oneof(pieces, fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 30 })
  .map((a) => a.join(''));

test('never throws and is idempotent on arbitrary strings', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), mixed), (text) => {
      const once = redact(text, r);
      expect(typeof once).toBe('string');
      expect(redact(once, r)).toBe(once);
    }),
    { numRuns: 2000 },
  );
});

test('a secret placed anywhere in arbitrary text does not survive', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), (before, after) => {
      expect(redact(`${before} hunter2-s3cret-Xy ${after}`, r)).not.toContain('hunter2-s3cret-Xy');
      expect(redact(`${before} ghp_0123456789abcdefghijABCDEFGHIJ0123 ${after}`, r)).not.toContain(
        '0123456789abcdefghij',
      );
    }),
    { numRuns: 500 },
  );
});

test.each([
  [
    'prose with secrets',
    () => `a line of prose with hunter2-s3cret-Xy and ${'ZGF0YQ'.repeat(4)} in it, api_key=abcd1234 ok\n`,
  ],
  ['one long line of word characters', () => 'a.a-a_a'],
  ['base64-like runs', () => 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789+/'],
  ['spaced-out characters', () => 'x y z '],
  ['percent-encoding and zero-width characters', () => '%41%42\u200B%4'],
])('a 4 MB input of %s is redacted in time linear in its size (no quadratic pass)', (_, unit) => {
  // Ratios within one run, not a wall-clock limit (shared machines are noisy): 16 times the input
  // takes about 16 times as long, and a quadratic pass would take 256 times. Best of a few tries.
  const u = unit();
  const of = (bytes: number) => u.repeat(Math.ceil(bytes / u.length));
  const best = (text: string, tries: number) => {
    let ms = Infinity;
    let out = '';
    for (let i = 0; i < tries; i++) {
      const started = process.hrtime.bigint();
      out = redact(text, r);
      ms = Math.min(ms, Number(process.hrtime.bigint() - started) / 1e6);
    }
    return { ms, out };
  };
  const small = best(of(256 * 1024), 3);
  const large = best(of(4 * 1024 * 1024), 2);
  expect(large.ms / Math.max(small.ms, 1)).toBeLessThan(48);
  expect(large.out).not.toContain('hunter2-s3cret-Xy');
});
