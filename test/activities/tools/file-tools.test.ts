import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import { createFileLedger } from '../../../activities/tools/ledger';
import { MAX_LIST_ENTRIES } from '../../../activities/tools/list-files';
import { MAX_WRITE_BYTES } from '../../../activities/tools/text-files';
import type { ToolOutcome } from '../../../activities/tools/types';
import { removeDir, tempDir, toolContext } from './workspace';

let root: string;
let outside: string;
const registry = createToolRegistry();

beforeEach(() => {
  root = tempDir('files');
  outside = tempDir('outside');
  mkdirSync(path.join(root, 'src', 'nested'), { recursive: true });
  writeFileSync(path.join(root, 'README.md'), '# Demo\nhello world\n');
  writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n// TODO: fix a\n');
  writeFileSync(path.join(root, 'src', 'nested', 'b.ts'), 'export const b = 2; // TODO: fix b\n');
  writeFileSync(path.join(outside, 'secret.txt'), 'top secret\n');
});
afterEach(() => {
  removeDir(root);
  removeDir(outside);
});

const call = (name: string, input: unknown, overrides = {}): Promise<ToolOutcome> =>
  executeTool(registry, name, input, toolContext(root, overrides));

function expectError(outcome: ToolOutcome, fragment: string): void {
  expect(outcome.content).toContain(fragment);
  expect(outcome.isError).toBe(true);
}

describe('read_file', () => {
  test('returns the UTF-8 text of a file', async () => {
    writeFileSync(path.join(root, 'utf8.txt'), 'héllo → wörld\n');
    expect(await call('read_file', { path: 'utf8.txt' })).toEqual({ content: 'héllo → wörld\n', isError: false });
  });

  test('a directory is refused and points to list_files', async () => {
    expectError(await call('read_file', { path: 'src' }), 'path src is a directory: use list_files');
  });

  test('a file over 2 MB is refused with its size', async () => {
    writeFileSync(path.join(root, 'big.txt'), 'x'.repeat(2 * 1024 * 1024 + 1));
    expectError(await call('read_file', { path: 'big.txt' }), 'over the 2 MB limit');
  });

  test('a binary file (NUL in the first 8 KB) is refused', async () => {
    writeFileSync(path.join(root, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    expectError(await call('read_file', { path: 'image.png' }), 'binary file');
  });

  test('a missing file is an error that names the relative path', async () => {
    const outcome = await call('read_file', { path: 'src/missing.ts' });
    expectError(outcome, 'path src/missing.ts does not exist');
    expect(outcome.content).not.toContain(root);
  });

  test('traversal, absolute paths and symlinks leading outside are refused', async () => {
    symlinkSync('/etc', path.join(root, 'etc-link'));
    symlinkSync(outside, path.join(root, 'src', 'out'));
    expectError(await call('read_file', { path: '../x' }), 'leaves the workspace');
    expectError(await call('read_file', { path: '/etc/hostname' }), 'is absolute');
    expectError(await call('read_file', { path: 'etc-link/hostname' }), 'points outside the workspace');
    const viaDir = await call('read_file', { path: 'src/out/secret.txt' });
    expectError(viaDir, 'points outside the workspace');
    expect(viaDir.content).not.toContain('top secret');
  });

  test('a symlink inside the workspace is followed', async () => {
    symlinkSync('src/a.ts', path.join(root, 'alias.ts'));
    expect(await call('read_file', { path: 'alias.ts' })).toEqual({
      content: 'export const a = 1;\n// TODO: fix a\n',
      isError: false,
    });
  });
});

describe('list_files', () => {
  test('lists one level, sorted, directories with a slash, files with their size, .git skipped', async () => {
    mkdirSync(path.join(root, '.git'));
    writeFileSync(path.join(root, 'b.txt'), '12345');
    const outcome = await call('list_files', { path: '.' });
    expect(outcome).toEqual({
      content: ['README.md (19 bytes)', 'b.txt (5 bytes)', 'src/'].join('\n'),
      isError: false,
    });
  });

  test('lists a subdirectory without descending further', async () => {
    expect((await call('list_files', { path: 'src' })).content).toBe('a.ts (35 bytes)\nnested/');
  });

  test('a symlink leading outside is listed without following it', async () => {
    symlinkSync(outside, path.join(root, 'src', 'out'));
    const outcome = await call('list_files', { path: 'src' });
    expect(outcome.content).toContain('out (symlink leading outside the workspace or nowhere)');
    expect(outcome.content).not.toContain('out/');
  });

  test('a file or a directory outside the workspace is refused', async () => {
    expectError(await call('list_files', { path: 'README.md' }), 'is a file, not a directory');
    expectError(await call('list_files', { path: '..' }), 'leaves the workspace');
  });

  test('an empty directory says so', async () => {
    mkdirSync(path.join(root, 'empty'));
    expect((await call('list_files', { path: 'empty' })).content).toBe('(empty is empty)');
  });

  test(`a huge directory lists its first ${MAX_LIST_ENTRIES} entries by name and says how many more there are`, async () => {
    mkdirSync(path.join(root, 'huge'));
    for (let i = 0; i < MAX_LIST_ENTRIES + 5; i += 1)
      writeFileSync(path.join(root, 'huge', `f${String(i).padStart(4, '0')}`), '');
    const lines = (await call('list_files', { path: 'huge' })).content.split('\n');
    expect(lines).toHaveLength(MAX_LIST_ENTRIES + 1);
    expect(lines[0]).toBe('f0000 (0 bytes)');
    expect(lines[MAX_LIST_ENTRIES - 1]).toBe(`f${String(MAX_LIST_ENTRIES - 1).padStart(4, '0')} (0 bytes)`);
    expect(lines[MAX_LIST_ENTRIES]).toBe(
      `… 5 more entries (list_files shows ${MAX_LIST_ENTRIES}); use search or a narrower path`,
    );
  });
});

describe('search', () => {
  test('finds matches recursively as file:line: text with relative paths', async () => {
    const outcome = await call('search', { pattern: 'TODO: fix \\w' });
    expect(outcome).toEqual({
      content: 'src/a.ts:2: // TODO: fix a\nsrc/nested/b.ts:1: export const b = 2; // TODO: fix b',
      isError: false,
    });
  });

  test('searches only under the given path', async () => {
    expect((await call('search', { pattern: 'TODO', path: 'src/nested' })).content).toBe(
      'src/nested/b.ts:1: export const b = 2; // TODO: fix b',
    );
  });

  test('skips .git, node_modules and binary files', async () => {
    mkdirSync(path.join(root, '.git'));
    mkdirSync(path.join(root, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(path.join(root, '.git', 'COMMIT_EDITMSG'), 'needle\n');
    writeFileSync(path.join(root, 'node_modules', 'dep', 'index.js'), 'needle\n');
    writeFileSync(path.join(root, 'blob.bin'), Buffer.concat([Buffer.from('needle\n'), Buffer.from([0])]));
    writeFileSync(path.join(root, 'found.txt'), 'a needle here\n');
    expect((await call('search', { pattern: 'needle' })).content).toBe('found.txt:1: a needle here');
  });

  test('lists at most 200 matches and counts the rest', async () => {
    writeFileSync(path.join(root, 'many.txt'), Array.from({ length: 250 }, (_, i) => `match ${i}`).join('\n'));
    const lines = (await call('search', { pattern: '^match' })).content.split('\n');
    expect(lines).toHaveLength(201);
    expect(lines[199]).toBe('many.txt:200: match 199');
    expect(lines[200]).toBe('… 50 more');
  });

  test('caps its output at outputCapChars', async () => {
    writeFileSync(
      path.join(root, 'many.txt'),
      Array.from({ length: 100 }, (_, i) => `match ${i} ${'x'.repeat(50)}`).join('\n'),
    );
    const outcome = await call('search', { pattern: 'match' }, { outputCapChars: 500 });
    expect(outcome.content.length).toBeLessThan(600);
    expect(outcome.content).toMatch(/\[… \d+ chars cut …\]$/);
  });

  test('an invalid regular expression is an error', async () => {
    expectError(await call('search', { pattern: '(unclosed' }), 'invalid regular expression (unclosed');
  });

  test('no match says so', async () => {
    expect(await call('search', { pattern: 'nothing-like-this' })).toEqual({
      content: 'no matches for /nothing-like-this/ under .',
      isError: false,
    });
  });

  test('a search path leading outside is refused', async () => {
    symlinkSync(outside, path.join(root, 'out'));
    expectError(await call('search', { pattern: 'secret', path: 'out' }), 'points outside the workspace');
  });
});

describe('write_file', () => {
  test('creates parent directories and reports the bytes written', async () => {
    const outcome = await call('write_file', { path: 'new/deep/file.txt', content: 'héllo\n' });
    expect(outcome).toEqual({ content: 'wrote 7 bytes to new/deep/file.txt', isError: false });
    expect(readFileSync(path.join(root, 'new', 'deep', 'file.txt'), 'utf8')).toBe('héllo\n');
  });

  test('overwrites an existing file', async () => {
    await call('write_file', { path: 'README.md', content: 'replaced' });
    expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toBe('replaced');
  });

  test('.git/config, traversal and symlinks leading outside are refused and nothing is written', async () => {
    mkdirSync(path.join(root, '.git'));
    writeFileSync(path.join(root, '.git', 'config'), '[core]\n');
    symlinkSync(outside, path.join(root, 'out'));
    symlinkSync('/etc', path.join(root, 'etc-link'));
    expectError(await call('write_file', { path: '.git/config', content: 'x' }), 'inside .git/');
    expectError(await call('write_file', { path: '../escaped.txt', content: 'x' }), 'leaves the workspace');
    expectError(await call('write_file', { path: 'out/new.txt', content: 'x' }), 'points outside the workspace');
    expectError(await call('write_file', { path: 'out/secret.txt', content: 'x' }), 'points outside the workspace');
    expectError(
      await call('write_file', { path: 'etc-link/loopwright-test', content: 'x' }),
      'points outside the workspace',
    );
    expect(readFileSync(path.join(root, '.git', 'config'), 'utf8')).toBe('[core]\n');
    expect(existsSync(path.join(path.dirname(root), 'escaped.txt'))).toBe(false);
    expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n');
  });

  test(`content over ${MAX_WRITE_BYTES} bytes is refused with its size and the limit, and nothing is written`, async () => {
    const outcome = await call('write_file', { path: 'big.txt', content: 'x'.repeat(MAX_WRITE_BYTES + 1) });
    expectError(
      outcome,
      `content for big.txt would be 2.0 MB (${MAX_WRITE_BYTES + 1} bytes), over the 2 MB limit (${MAX_WRITE_BYTES} bytes)`,
    );
    expect(existsSync(path.join(root, 'big.txt'))).toBe(false);
    // The limit is on UTF-8 bytes, not characters.
    expectError(
      await call('write_file', { path: 'big.txt', content: 'é'.repeat(MAX_WRITE_BYTES / 2 + 1) }),
      'over the 2 MB limit',
    );
    expect(await call('write_file', { path: 'big.txt', content: 'x'.repeat(MAX_WRITE_BYTES) })).toEqual({
      content: `wrote ${MAX_WRITE_BYTES} bytes to big.txt`,
      isError: false,
    });
  });

  test('writing through a symlink inside the workspace changes its target', async () => {
    symlinkSync('src/a.ts', path.join(root, 'alias.ts'));
    await call('write_file', { path: 'alias.ts', content: 'via alias' });
    expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe('via alias');
  });
});

describe('edit_file', () => {
  test('replaces the one occurrence and keeps $ patterns literal', async () => {
    const outcome = await call('edit_file', {
      path: 'src/a.ts',
      old_text: 'const a = 1;',
      new_text: "const a = '$&';",
    });
    expect(outcome.isError).toBe(false);
    expect(outcome.content).toContain('edited src/a.ts at line 1');
    expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe("export const a = '$&';\n// TODO: fix a\n");
  });

  describe('retried after a lost worker (the same idempotency key)', () => {
    const ledgerOf = () => createFileLedger(tempDir('ledger'));
    const edit = { path: 'src/a.ts', old_text: 'const a = 1;', new_text: 'const a = 2;' };
    const edited = 'export const a = 2;\n// TODO: fix a\n';

    test('a retry that finds its edit applied answers as the first try did, and edits nothing more', async () => {
      const idempotency = { key: 'wf/run/7', ledger: ledgerOf() };
      const first = await call('edit_file', edit, { idempotency });
      const again = await call('edit_file', edit, { idempotency });
      expect(again).toEqual(first);
      expect(first.isError).toBe(false);
      expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe(edited);
      // Another call (another key) with the same input is a new edit, and finds nothing to replace.
      expectError(
        await call('edit_file', edit, { idempotency: { ...idempotency, key: 'wf/run/8' } }),
        'old_text not found',
      );
    });

    test('a worker lost after recording the intent but before writing: the retry applies the edit once', async () => {
      const ledger = ledgerOf();
      const crashing = {
        key: 'wf/run/9',
        ledger: {
          get: ledger.get,
          put: async (k: string, v: unknown) => {
            await ledger.put(k, v);
            throw new Error('worker lost');
          },
        },
      };
      expectError(await call('edit_file', edit, { idempotency: crashing }), 'worker lost');
      expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe('export const a = 1;\n// TODO: fix a\n');
      const retry = await call('edit_file', edit, { idempotency: { key: 'wf/run/9', ledger } });
      expect(retry).toMatchObject({ isError: false, content: expect.stringContaining('edited src/a.ts at line 1') });
      expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe(edited);
    });

    test('a file changed by someone else between the tries is not edited blindly', async () => {
      const idempotency = { key: 'wf/run/10', ledger: ledgerOf() };
      await call('edit_file', edit, { idempotency });
      writeFileSync(path.join(root, 'src', 'a.ts'), 'something else entirely\n');
      expectError(await call('edit_file', edit, { idempotency }), 'src/a.ts changed while this edit was being retried');
    });
  });

  test('old_text that does not occur is an error and the file is unchanged', async () => {
    expectError(
      await call('edit_file', { path: 'src/a.ts', old_text: 'const z', new_text: 'x' }),
      'old_text not found in src/a.ts',
    );
    expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe('export const a = 1;\n// TODO: fix a\n');
  });

  test('old_text that occurs twice is an error asking for more context', async () => {
    writeFileSync(path.join(root, 'twice.ts'), 'let x = 1;\nlet x = 1;\n');
    expectError(
      await call('edit_file', { path: 'twice.ts', old_text: 'let x = 1;', new_text: 'y' }),
      'old_text occurs 2 times in twice.ts: give more context',
    );
    expect(readFileSync(path.join(root, 'twice.ts'), 'utf8')).toBe('let x = 1;\nlet x = 1;\n');
  });

  test('an edit whose result would be over 2 MB is refused and the file is unchanged', async () => {
    const outcome = await call('edit_file', {
      path: 'src/a.ts',
      old_text: 'const a = 1;',
      new_text: 'x'.repeat(MAX_WRITE_BYTES),
    });
    expectError(
      outcome,
      `the edited src/a.ts would be 2.0 MB (${MAX_WRITE_BYTES + 23} bytes), over the 2 MB limit (${MAX_WRITE_BYTES} bytes)`,
    );
    expect(readFileSync(path.join(root, 'src', 'a.ts'), 'utf8')).toBe('export const a = 1;\n// TODO: fix a\n');
  });

  test('counting a long, repetitive old_text in a 2 MB file stays fast: within a small factor of a miss', async () => {
    writeFileSync(path.join(root, 'aaa.txt'), 'a'.repeat(MAX_WRITE_BYTES));
    // Counted at every offset, this needle would match about 2 million times at 100 KB of comparisons each.
    const time = async (oldText: string) => {
      const started = performance.now();
      const outcome = await call('edit_file', { path: 'aaa.txt', old_text: oldText, new_text: 'b' });
      return { ms: performance.now() - started, outcome };
    };
    const miss = await time('b'.repeat(100_000));
    const repetitive = await time('a'.repeat(100_000));
    expectError(miss.outcome, 'old_text not found in aaa.txt');
    expectError(repetitive.outcome, 'old_text occurs 21 times in aaa.txt: give more context');
    expectError((await time('a')).outcome, 'old_text occurs 1000 or more times in aaa.txt');
    expect(repetitive.ms / miss.ms).toBeLessThan(50);
  });

  test('edits inside .git/ are refused', async () => {
    mkdirSync(path.join(root, '.git'));
    writeFileSync(path.join(root, '.git', 'config'), '[core]\n');
    expectError(await call('edit_file', { path: '.git/config', old_text: '[core]', new_text: '[x]' }), 'inside .git/');
  });
});
