import path from 'node:path';

/**
 * Code that loads base's test infrastructure: a line the change adds to code (not to tests) that
 * imports one of base's test helpers or test files. Code under test runs in the same process as
 * the tests, so once it holds the helper's module it can replace what base's tests assert through
 * (`import lib.check as c; c.assert_equal = lambda a, b: None` in `calc/math.py`): the helper's
 * file stays as base wrote it, the gate's overlay run has it, and base's failing test passes with
 * the bug still there. Code has no business loading the tests' helpers, so the change policy
 * fails such a line, like the other ways code looks at its tests (diff-policy/test-detection.ts).
 *
 * Lexical, like those: Python `import` and `from ... import` lines (absolute names looked up from
 * the root, `src/` and the folders of base's test files, which pytest puts on sys.path; relative
 * ones from the file's package), JavaScript and TypeScript `require`, `import` and `import()` of a
 * relative path (with the extensions and index files node and jest try), and Go imports whose path
 * ends with a package of base's made only of test helpers (Go files of production packages that
 * hold a helper too, `pkg/foo/testing.go`, do not make importing `pkg/foo` count), or that a
 * `//go:linkname` directive reaches into without importing it (`//go:linkname eps
 * example.com/calc/internal/check.Epsilon`, then `eps = 1e18` in an `init`: base's `check.Near`
 * then passes anything). Installed and vendored packages (`node_modules`,
 * `site-packages`, `vendor`) are runner configuration, not helpers, and never count; a name
 * spelled to evade this (`importlib.import_module('lib.' + 'check')`) is the code-review judge's.
 */
export interface InfraImport {
  file: string;
  line: number;
  text: string;
  /** The base file it loads. */
  loads: string;
}

const PY_FILE = /\.py$/;
const JS_FILE = /\.(c|m)?(j|t)sx?$/;
const GO_FILE = /\.go$/;
const JS_EXTENSIONS = ['', '.js', '.cjs', '.mjs', '.json', '.jsx', '.ts', '.tsx', '.mts', '.cts', '.node'];
const PYTEST_FILE = /(^|\/)(test_[^/]*|[^/]*_test|conftest)\.py$/;
const COMMENT = /^\s*(\/\/|\/\*|\*|#)/;
/** Go's `//go:linkname local importpath.name`: a variable or function of another package, without importing it. */
const LINKNAME = /^\s*\/\/go:linkname\s+\S+\s+(\S+)/;

/**
 * The imports of base's test infrastructure among `lines` (1-based line numbers, as the change
 * has them) of the code file `file`. `helpers` are base's test infrastructure files (not its
 * installed or vendored packages); `baseFiles` all of base's files.
 */
export function infraImports(
  file: string,
  lines: Array<{ line: number; text: string }>,
  helpers: ReadonlySet<string>,
  baseFiles: Iterable<string>,
): InfraImport[] {
  const lookup = PY_FILE.test(file)
    ? pythonLookup(file, helpers, baseFiles)
    : JS_FILE.test(file)
      ? jsLookup(file, helpers)
      : GO_FILE.test(file) && !file.endsWith('_test.go')
        ? goLookup(helpers, baseFiles)
        : undefined;
  if (!lookup) return [];
  const found: InfraImport[] = [];
  for (const { line, text } of lines) {
    if (COMMENT.test(text) && !LINKNAME.test(text)) continue;
    const loads = lookup(text);
    if (loads) found.push({ file, line, text: text.trim(), loads });
  }
  return found;
}

type Lookup = (text: string) => string | undefined;

function pythonLookup(file: string, helpers: ReadonlySet<string>, baseFiles: Iterable<string>): Lookup {
  const roots = new Set(['', 'src/']);
  for (const f of baseFiles) if (PYTEST_FILE.test(f)) roots.add(dirOf(f));
  const byModule = (parts: string[], from: string[]): string | undefined => {
    for (const root of from) {
      const stem = `${root}${parts.join('/')}`;
      for (const candidate of [`${stem}.py`, `${stem}/__init__.py`]) if (helpers.has(candidate)) return candidate;
    }
    return undefined;
  };
  return (text) => {
    const from = /^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([^#]*)/.exec(text);
    const names: Array<{ parts: string[]; roots: string[] }> = [];
    if (from) {
      const [, dots = '', module = '', imported = ''] = from;
      const base = module === '' ? [] : module.split('.');
      let at = [...roots];
      if (dots.length > 0) {
        const pkg = dirOf(file).split('/').filter(Boolean);
        at = [pkg.slice(0, Math.max(pkg.length - (dots.length - 1), 0)).join('/')].map((d) => (d ? `${d}/` : ''));
      }
      if (base.length > 0) names.push({ parts: base, roots: at });
      for (const part of imported.split(',')) {
        const name = /^\s*(\w+)/.exec(part)?.[1];
        if (name) names.push({ parts: [...base, name], roots: at });
      }
    } else {
      const imp = /^\s*import\s+([^#]+)/.exec(text);
      for (const part of imp?.[1]?.split(',') ?? []) {
        const dotted = /^\s*([\w.]+)/.exec(part)?.[1];
        if (!dotted) continue;
        const parts = dotted.split('.');
        // `import a.b.c` loads a, a.b and a.b.c.
        for (let i = 1; i <= parts.length; i++) names.push({ parts: parts.slice(0, i), roots: [...roots] });
      }
    }
    for (const n of names) {
      const hit = byModule(n.parts, n.roots);
      if (hit) return hit;
    }
    return undefined;
  };
}

function jsLookup(file: string, helpers: ReadonlySet<string>): Lookup {
  const specifiers = [
    /\brequire\s*\(\s*['"`]([^'"`]+)['"`]/g,
    /\bimport\s*\(\s*['"`]([^'"`]+)['"`]/g,
    /\b(?:from|import)\s*['"]([^'"]+)['"]/g,
  ];
  return (text) => {
    for (const re of specifiers)
      for (const m of text.matchAll(re)) {
        const spec = m[1] ?? '';
        if (!spec.startsWith('.')) continue;
        const target = path.posix.normalize(path.posix.join(dirOf(file), spec)).replace(/\/$/, '');
        for (const ext of JS_EXTENSIONS)
          for (const candidate of [`${target}${ext}`, `${target}/index${ext}`])
            if (ext !== '' || candidate === target) if (helpers.has(candidate)) return candidate;
      }
    return undefined;
  };
}

/** Packages of base whose every non-test Go file is test infrastructure (a helper package such as `internal/check`). */
function goLookup(helpers: ReadonlySet<string>, baseFiles: Iterable<string>): Lookup {
  const dirs = new Map<string, string>();
  const mixed = new Set<string>();
  for (const f of baseFiles) {
    if (!GO_FILE.test(f) || f.endsWith('_test.go')) continue;
    const dir = dirOf(f).replace(/\/$/, '');
    if (!helpers.has(f)) mixed.add(dir);
    else if (!dirs.has(dir)) dirs.set(dir, f);
  }
  for (const dir of mixed) dirs.delete(dir);
  return (text) => {
    const target = LINKNAME.exec(text)?.[1];
    // `example.com/calc/internal/check.Epsilon`: the package path ends before the last dot after the last slash.
    const pkg = target
      ? target.slice(0, target.lastIndexOf('/') + 1) + target.slice(target.lastIndexOf('/') + 1).split('.')[0]
      : /^\s*(?:import\s+)?(?:[\w.]+\s+)?"([^"]+)"\s*(?:\/\/.*)?$/.exec(text)?.[1];
    if (!pkg) return undefined;
    for (const [dir, h] of dirs) if (dir !== '' && (pkg === dir || pkg.endsWith(`/${dir}`))) return h;
    return undefined;
  };
}

/** `a/b/c.py` → `a/b/`; a file at the root → ``. */
function dirOf(file: string): string {
  const d = path.posix.dirname(file);
  return d === '.' ? '' : `${d}/`;
}
