import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { resolveInside, resolveInsideAsync } from '../../../activities/tools/confine';
import { ToolError } from '../../../activities/tools/types';
import { removeDir, tempDir } from './workspace';

let root: string;
let outside: string;

beforeEach(() => {
  root = tempDir('confine');
  outside = tempDir('outside');
  mkdirSync(path.join(root, 'src'));
  writeFileSync(path.join(root, 'src', 'a.ts'), 'export {};\n');
  writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
});
afterEach(() => {
  removeDir(root);
  removeDir(outside);
});

function refusal(relPath: string, opts?: { forWrite?: boolean }): string {
  try {
    resolveInside(root, relPath, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return (err as Error).message;
  }
  throw new Error(`resolveInside(${relPath}) was not refused`);
}

describe('resolveInside', () => {
  test('a plain relative path resolves to the real absolute path inside the root', () => {
    expect(resolveInside(root, 'src/a.ts')).toBe(path.join(realpathSync(root), 'src', 'a.ts'));
    expect(resolveInside(root, '.')).toBe(realpathSync(root));
  });

  test('a path that does not exist yet resolves inside the root (for writes)', () => {
    expect(resolveInside(root, 'new/dir/file.txt', { forWrite: true })).toBe(
      path.join(realpathSync(root), 'new', 'dir', 'file.txt'),
    );
  });

  test('a `..` that stays inside the root is allowed', () => {
    expect(resolveInside(root, 'src/../src/a.ts')).toBe(path.join(realpathSync(root), 'src', 'a.ts'));
  });

  test.each(['../x', 'a/../../x', '..', 'src/../../x'])('traversal %s is refused as leaving the workspace', (p) => {
    expect(refusal(p)).toBe(`path ${p} leaves the workspace`);
    expect(refusal(p, { forWrite: true })).toContain('leaves the workspace');
  });

  test('an absolute path is refused, even one inside the root', () => {
    expect(refusal('/etc/passwd')).toContain('path /etc/passwd is absolute');
    expect(refusal(path.join(root, 'src', 'a.ts'))).toContain('is absolute');
  });

  test('a NUL byte is refused', () => {
    expect(refusal('src/a.ts\0.png')).toContain('NUL byte');
  });

  test('a symlink to /etc is refused for reading and writing', () => {
    symlinkSync('/etc', path.join(root, 'etc-link'));
    expect(refusal('etc-link/passwd')).toBe('path etc-link/passwd points outside the workspace');
    expect(refusal('etc-link/new-file', { forWrite: true })).toContain('points outside the workspace');
    expect(refusal('etc-link')).toContain('points outside the workspace');
  });

  test('a symlinked directory leading outside is refused for existing and new files', () => {
    symlinkSync(outside, path.join(root, 'src', 'link'));
    expect(refusal('src/link')).toBe('path src/link points outside the workspace');
    expect(refusal('src/link/secret.txt')).toContain('points outside the workspace');
    expect(refusal('src/link/deep/new.txt', { forWrite: true })).toContain('points outside the workspace');
  });

  test('a symlinked file leading outside is refused', () => {
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'secret.txt'));
    expect(refusal('secret.txt')).toContain('points outside the workspace');
  });

  test('a dangling symlink is refused, so a write cannot create its target outside', () => {
    symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling.txt'));
    expect(refusal('dangling.txt', { forWrite: true })).toContain('dangling symlink');
  });

  test('a symlink that stays inside the workspace is allowed and resolves to its target', () => {
    symlinkSync('src', path.join(root, 'alias'));
    expect(resolveInside(root, 'alias/a.ts')).toBe(path.join(realpathSync(root), 'src', 'a.ts'));
  });

  test('a root that is itself reached through a symlink is realpathed, so its files are inside', () => {
    const linkedRoot = path.join(outside, 'root-link');
    symlinkSync(root, linkedRoot);
    expect(resolveInside(linkedRoot, 'src/a.ts')).toBe(path.join(realpathSync(root), 'src', 'a.ts'));
  });

  test('writes into .git/ are refused, reads are not', () => {
    mkdirSync(path.join(root, '.git'));
    writeFileSync(path.join(root, '.git', 'config'), '[core]\n');
    expect(refusal('.git/config', { forWrite: true })).toBe(
      'path .git/config is inside .git/: writing there is refused',
    );
    expect(refusal('.git/hooks/pre-commit', { forWrite: true })).toContain('inside .git/');
    expect(refusal('sub/../.git/config', { forWrite: true })).toContain('inside .git/');
    expect(resolveInside(root, '.git/config')).toBe(path.join(realpathSync(root), '.git', 'config'));
  });

  test('a symlink leading into .git/ is refused for writes', () => {
    mkdirSync(path.join(root, '.git'));
    symlinkSync('.git', path.join(root, 'gitdir'));
    expect(refusal('gitdir/config', { forWrite: true })).toContain('leads into .git/');
  });
});

describe('resolveInsideAsync', () => {
  /** What a resolver makes of a path: its result, or the class and message of its refusal. */
  const outcomeOf = (fn: () => string): string => {
    try {
      return `ok ${fn()}`;
    } catch (err) {
      return `${(err as Error).name}: ${(err as Error).message}`;
    }
  };
  const asyncOutcomeOf = async (fn: () => Promise<string>): Promise<string> => {
    try {
      return `ok ${await fn()}`;
    } catch (err) {
      return `${(err as Error).name}: ${(err as Error).message}`;
    }
  };

  test('follows exactly the same rules as resolveInside, on async fs calls', async () => {
    mkdirSync(path.join(root, '.git'));
    symlinkSync('/etc', path.join(root, 'etc-link'));
    symlinkSync(outside, path.join(root, 'src', 'link'));
    symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling.txt'));
    symlinkSync('src', path.join(root, 'alias'));
    symlinkSync('.git', path.join(root, 'gitdir'));
    const cases: Array<[string, { forWrite?: boolean }]> = [
      ['src/a.ts', {}],
      ['.', {}],
      ['new/dir/file.txt', { forWrite: true }],
      ['src/../src/a.ts', {}],
      ['../x', {}],
      ['a/../../x', { forWrite: true }],
      ['/etc/passwd', {}],
      ['src/a.ts\0.png', {}],
      ['etc-link/passwd', {}],
      ['etc-link/new-file', { forWrite: true }],
      ['src/link/secret.txt', {}],
      ['src/link/deep/new.txt', { forWrite: true }],
      ['dangling.txt', { forWrite: true }],
      ['alias/a.ts', {}],
      ['.git/config', {}],
      ['.git/config', { forWrite: true }],
      ['gitdir/config', { forWrite: true }],
      ['src/a.ts/below', {}],
    ];
    for (const [relPath, opts] of cases) {
      const expected = outcomeOf(() => resolveInside(root, relPath, opts));
      expect([relPath, await asyncOutcomeOf(() => resolveInsideAsync(root, relPath, opts))]).toEqual([
        relPath,
        expected,
      ]);
    }
    // A root that cannot be resolved is the worker's problem (a plain Error), not the model's.
    expect(await asyncOutcomeOf(() => resolveInsideAsync(path.join(root, 'missing-root'), 'a.ts'))).toBe(
      outcomeOf(() => resolveInside(path.join(root, 'missing-root'), 'a.ts')),
    );
  });
});
