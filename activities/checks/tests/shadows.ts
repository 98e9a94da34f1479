import path from 'node:path';

/**
 * Files a change adds that a module loader would load in place of test infrastructure base has,
 * so that base's tests, "run as base wrote them", run the change's helper instead: `require('./
 * helpers')` loads `test/helpers` (no extension) before `test/helpers.js`, `helpers.js` before
 * `helpers.json` or `helpers/index.js`, and Python imports a package `helpers/__init__.py`
 * before a module `helpers.py`. Any added file with the same name as a base file in the same
 * folder save its extension counts, and a file named like a base folder whose index it would
 * replace. Python imports by name from every folder on sys.path, and pytest puts test folders
 * first: an added `tests/calc/math.py` is imported as `calc.math` in place of base's own, so an
 * added module or package below another folder, named like one of base's top-level ones, counts
 * too ({@link pythonShadows}). A `package.json` added in a folder that holds base's tests (or at
 * the root, where base had none) becomes their package scope: its `type` and `imports` (`#helpers`
 * mapped to any file) decide what they load. So does an `__init__.py` added over base's Python
 * tests: pytest then puts the package's parent folder on sys.path in place of the tests' own, and
 * `from helpers import check` finds a `helpers.py` of the change's at the root. The gate leaves
 * these out of its overlay, and the change policy fails them.
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
  '.pyd',
]);
const loadable = (file: string) => LOADABLE.has(path.posix.extname(file));

/** Python's compiled extensions, whose name carries a tag after the module's (`name.cpython-311-x86_64-linux-gnu.so`). */
const TAGGED = /\.(so|pyd)$/;

/**
 * `dir/name.ext` → `dir/name`; a name without an extension (or a dotfile) stays as it is. A
 * Python extension module loses its tag too: Python imports `name.cpython-311-x86_64-linux-gnu.so`
 * as `name`, before `name.py`.
 */
function stem(file: string): string {
  const base = path.posix.basename(file);
  const dot = TAGGED.test(base) ? base.indexOf('.') : base.lastIndexOf('.');
  return dot > 0 ? file.slice(0, file.length - (base.length - dot)) : file;
}

/** The added files (`added`) that shadow a file of `baseInfra`, each with the first it shadows. */
export function shadowingFiles(addedFiles: Iterable<string>, baseInfra: Iterable<string>): Shadow[] {
  const added = [...addedFiles];
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
      // A package's __init__ in any form Python loads (.py, a .pyc without source, a compiled extension).
      (path.posix.basename(s) === '__init__' ? byStem.get(path.posix.dirname(a)) : undefined);
    if (shadowed !== undefined && shadowed !== a) found.push({ file: a, shadows: shadowed });
  }
  // A package scope over base's tests: a package.json (module type, #imports), a Python package's __init__ (sys.path, module names).
  for (const a of added) {
    const python = loadable(a) && path.posix.basename(stem(a)) === '__init__';
    if ((path.posix.basename(a) !== 'package.json' && !python) || found.some((f) => f.file === a)) continue;
    const dir = path.posix.dirname(a);
    const under = [...byStem.values()].find(
      (b) => (dir === '.' || b.startsWith(`${dir}/`)) && (!python || b.endsWith('.py')),
    );
    if (under !== undefined)
      found.push({ file: a, shadows: `the package scope base's ${under} ${python ? 'is imported' : 'loads'} in` });
  }
  return found;
}

/** Base's top-level Python names: modules at the root (or in `src/`) and packages there (a folder with `__init__.py`). */
function topLevelPython(baseFiles: Iterable<string>): Map<string, string> {
  const names = new Map<string, string>();
  for (const f of baseFiles) {
    if (!f.endsWith('.py')) continue;
    const parts = f.split('/');
    const at = parts[0] === 'src' && parts.length > 1 ? 1 : 0;
    const rest = parts.slice(at);
    if (rest.length === 1) names.set(rest[0]!.slice(0, -3), f);
    else if (rest.length === 2 && rest[1] === '__init__.py') names.set(rest[0]!, f);
  }
  return names;
}

/** pytest's own names for test files and its conftest: their folders are on sys.path while base's tests run. */
const PYTEST_FILE = /(^|\/)(test_[^/]*|[^/]*_test|conftest)\.py$/;

/**
 * Added Python files below some folder that an import of one of base's top-level modules or
 * packages could find first (`tests/calc/math.py` for base's `calc/`), each with the base file
 * it stands for. Files added inside base's own package folders are not: they are the package's.
 * And a module or package added where pytest's sys.path looks first (the folder of a base test
 * file, or the root) named like a module base imports from outside (`imported`: the standard
 * library's `fractions`, an installed `numpy`): `tests/fractions.py` would stand in for it.
 */
export function pythonShadows(
  added: Iterable<string>,
  baseFiles: Iterable<string>,
  imported: ReadonlySet<string> = new Set(),
): Shadow[] {
  const bases = [...baseFiles];
  const names = topLevelPython(bases);
  const onPath = new Set(['.', ...bases.filter((f) => PYTEST_FILE.test(f)).map((f) => path.posix.dirname(f))]);
  const found: Shadow[] = [];
  for (const a of added) {
    if (!/\.(py|pyc|so|pyd)$/.test(a)) continue;
    const pkg = path.posix.basename(stem(a)) === '__init__';
    const at = pkg ? path.posix.dirname(a) : a;
    const name = path.posix.basename(at).split('.')[0]!;
    if (onPath.has(path.posix.dirname(at)) && imported.has(name) && !names.has(name))
      found.push({ file: a, shadows: `the module ${name} that base imports` });
  }
  if (names.size === 0) return found;
  for (const a of added) {
    if (found.some((f) => f.file === a)) continue;
    if (!/\.(py|pyc|so|pyd)$/.test(a)) continue;
    const parts = a.split('/');
    for (let i = 1; i < parts.length; i++) {
      const under = parts.slice(0, i).join('/');
      if (under === 'src') continue;
      // A module's name ends at its first dot (`calc.py`, `calc.cpython-311-x86_64-linux-gnu.so`).
      const name = i === parts.length - 1 ? parts[i]!.split('.')[0]! : parts[i]!;
      const shadowed = names.get(name);
      // Inside base's own package (calc/x.py under calc/) the name is the package's own path, not a second copy.
      if (shadowed !== undefined && !a.startsWith(`${path.posix.dirname(shadowed)}/`)) {
        found.push({ file: a, shadows: shadowed });
        break;
      }
    }
  }
  return found;
}
