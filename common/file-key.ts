import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { MAX_SLUG, testKey } from './test-key';

/**
 * The file name (without extension) of what Loopwright writes about a key: a report about a work
 * item, the trace report of a run. A key that is its own `testKey` (a discovered item's key) is
 * its name; any other key (`gh:issue/1`, a workflow id) is its slug, cut to 60 characters, then
 * `_` and 16 hex digits of its SHA-256. So two keys never share a file: `gh:issue/1` and
 * `gh-issue-1` slug alike, and a slug holds no `_`, so no key's name is another's hashed name.
 * `index` is hashed too: `index.md` is the reports folder's index.
 */
export function fileKey(key: string): string {
  if (testKey(key) === key && key !== 'index') return key;
  const slug = key
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG)
    .replace(/-+$/g, '');
  return `${slug || 'key'}_${bytesToHex(sha256(utf8ToBytes(key))).slice(0, 16)}`;
}
