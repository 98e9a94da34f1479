import fc from 'fast-check';
import { fileKey } from '../../common/file-key';
import { testKey } from '../../common/test-key';

/** The file names of reports and trace reports: stable, safe, and never shared by two keys. */
test('a key that is its own slug names its file as it is; any other key gets its slug, _ and a hash', () => {
  expect(fileKey('add-adds-two-numbers')).toBe('add-adds-two-numbers');
  expect(fileKey(testKey('add adds two numbers'))).toBe('add-adds-two-numbers');
  expect(fileKey('gh:issue/1')).toMatch(/^gh-issue-1_[0-9a-f]{16}$/);
  expect(fileKey('evaluate-optimize/20261204-093510-d604')).toMatch(
    /^evaluate-optimize-20261204-093510-d604_[0-9a-f]{16}$/,
  );
  expect(fileKey('index')).toMatch(/^index_[0-9a-f]{16}$/);
  expect(fileKey('✓✓')).toMatch(/^key_[0-9a-f]{16}$/);
  expect(fileKey('x'.repeat(500))).toMatch(/^x{60}_[0-9a-f]{16}$/);
  expect(fileKey('gh:issue/1')).toBe(fileKey('gh:issue/1'));
});

test('no two keys share a file name, even keys built to slug alike, and every name is a plain file name', () => {
  // A small alphabet of letters and separators makes keys that slug alike common.
  const key = fc.string({ unit: fc.constantFrom('a', 'B', '1', '-', '_', ':', '/', '.', ' ', 'é'), maxLength: 12 });
  fc.assert(
    fc.property(key, key, (a, b) => {
      fc.pre(a !== b);
      expect(fileKey(a)).not.toBe(fileKey(b));
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (k) => {
      expect(fileKey(k)).toMatch(/^[a-z0-9_-]{1,80}$/);
      expect(fileKey(k)).not.toMatch(/^[-.]/);
    }),
  );
});
