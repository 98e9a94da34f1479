import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { alternateChain, readOnlyStoresArgv } from '../../../activities/git/read-only-stores';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-ro-stores-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** An object store at `name` whose info/alternates holds `lines`. */
function store(name: string, lines: string[] = []): string {
  const at = path.join(dir, name);
  mkdirSync(path.join(at, 'info'), { recursive: true });
  if (lines.length) writeFileSync(path.join(at, 'info', 'alternates'), `${lines.join('\n')}\n`);
  return at;
}

describe('alternateChain', () => {
  test('follows alternates as git does: absolute and relative entries, in turn, comments and missing stores skipped, each once', () => {
    const c = store('c', [path.join(dir, 'a')]); // back to the start: a cycle
    const b = store('b', ['../c', '# a comment', '', path.join(dir, 'missing')]);
    const a = store('a', [b]);
    expect(alternateChain(a)).toEqual([b, c]);
  });

  test('follows 10 levels, more than git (6), and stops there', () => {
    const names = Array.from({ length: 14 }, (_, i) => `s${i}`);
    for (let i = names.length - 1; i >= 0; i--) store(names[i]!, i + 1 < names.length ? [`../${names[i + 1]}`] : []);
    expect(alternateChain(path.join(dir, 's0'))).toEqual(names.slice(1, 11).map((n) => path.join(dir, n)));
  });

  test('a store that borrows nothing has no chain', () => {
    expect(alternateChain(store('alone'))).toEqual([]);
  });
});

describe('readOnlyStoresArgv', () => {
  test('nothing to protect: no wrapper', async () => {
    expect(await readOnlyStoresArgv([])).toEqual([]);
    expect(await readOnlyStoresArgv([path.join(dir, 'not-there')])).toEqual([]);
  });

  test('each existing store once, mounted read-only over itself, the rest of the machine as it is', async () => {
    const a = store('a');
    const argv = await readOnlyStoresArgv([a, a, path.join(dir, 'not-there')]);
    expect(argv.slice(1)).toEqual(['--dev-bind', '/', '/', '--ro-bind', a, a, '--']);
    expect(path.basename(argv[0]!)).toBe('bwrap');
  });
});
