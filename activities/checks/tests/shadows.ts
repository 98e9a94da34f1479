import path from 'node:path';

/**
 * Files a change adds that a module loader would load in place of test infrastructure base has,
 * so that base's tests, "run as base wrote them", run the change's helper instead: `require('./
 * helpers')` loads `test/helpers` (no extension) before `test/helpers.js`, `helpers.js` before
 * `helpers.json` or `helpers/index.js`, and Python imports a package `helpers/__init__.py`
 * before a module `helpers.py`. Any added file with the same name as a base file in the same
 * folder save its extension counts, and a file named like a base folder whose index it would
 * replace. The gate leaves these out of its overlay, and the change policy fails them.
 */
export interface Shadow {
  /** The added file. */
  file: string;
  /** The file of base it would be loaded in place of. */
  shadows: string;
}

const INDEX = /^(index\.[^/]+|package\.json|__init__\.py)$/;
/** Extensions a module loader tries by itself (node, jest, ts-node; Python), and none. */
const LOADABLE = new Set([
  '',
  '.js',
  '.cjs',
  '.mjs',
  '.json',
  '.node',
  '.jsx',
  '.ts',
  '.tsx',
  '.mts',
  '.cts',
  '.py',
  '.pyc',
  '.so',
]);
const loadable = (file: string) => LOADABLE.has(path.posix.extname(file));

/** `dir/name.ext` → `dir/name`; a name without an extension (or a dotfile) stays as it is. */
function stem(file: string): string {
  const base = path.posix.basename(file);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? file.slice(0, file.length - (base.length - dot)) : file;
}

/** The added files (`added`) that shadow a file of `baseInfra`, each with the first it shadows. */
export function shadowingFiles(added: Iterable<string>, baseInfra: Iterable<string>): Shadow[] {
  const byStem = new Map<string, string>();
  const byFolder = new Map<string, string>();
  for (const b of baseInfra) {
    if (!loadable(b)) continue;
    if (!byStem.has(stem(b))) byStem.set(stem(b), b);
    if (INDEX.test(path.posix.basename(b)) && !byFolder.has(path.posix.dirname(b)))
      byFolder.set(path.posix.dirname(b), b);
  }
  const found: Shadow[] = [];
  for (const a of added) {
    if (!loadable(a)) continue;
    const s = stem(a);
    const shadowed =
      byStem.get(s) ??
      byFolder.get(s) ??
      (path.posix.basename(a) === '__init__.py' ? byStem.get(path.posix.dirname(a)) : undefined);
    if (shadowed !== undefined && shadowed !== a) found.push({ file: a, shadows: shadowed });
  }
  return found;
}
