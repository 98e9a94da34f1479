import { RE2JS } from 're2js';

/**
 * Test files by default: anything under a `test/`, `tests/` or `__tests__/` folder, `*.test.*`,
 * `*.spec.*`, `*_test.*` (Go), and `test_*.py` (pytest). Matched against the path relative to
 * the workspace root, with `/` separators.
 */
export const DEFAULT_TEST_PATTERN = String.raw`(^|/)(test|tests|__tests__)/|\.(test|spec)\.[^/]+$|_test\.[^/]+$|(^|/)test_[^/]*\.py$`;

const GLOB_CHARS = /[*?[]/;

/**
 * Compiles `allowedPaths` into a predicate on workspace-relative paths. An entry without glob
 * characters is a prefix: `src/` (or `src`) allows everything under `src`, `test/math.test.js`
 * allows that file. An entry with `*`, `?` or `[...]` is a glob anchored at the workspace root
 * (`*` stays within a folder, `**` crosses folders); a path is allowed when the glob matches it
 * or one of its folders, so `lib/*` allows `lib/a/b.js`. Paths that leave the root never match.
 */
export function compileAllowedPaths(entries: string[]): (file: string) => boolean {
  const matchers = entries.map((entry) => {
    const clean = entry
      .replace(/\\/g, '/')
      .replace(/^(\.\/)+/, '')
      .replace(/^\/+/, '');
    if (!GLOB_CHARS.test(clean)) {
      const dir = clean.replace(/\/+$/, '');
      if (dir === '' || dir === '.') return () => true;
      return (file: string) => file === dir || file.startsWith(`${dir}/`);
    }
    const re = globToRegExp(clean.replace(/\/+$/, ''));
    return (file: string) => ancestors(file).some((p) => re.test(p));
  });
  return (file) => !file.startsWith('../') && matchers.some((m) => m(file));
}

/** `a/b/c.js` → `a`, `a/b`, `a/b/c.js`. */
function ancestors(file: string): string[] {
  const parts = file.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/**
 * A glob as an anchored regular expression: `**` any folders, `*` and `?` within one name,
 * `[...]` a class. Compiled with RE2 (linear time): the paths it is matched against are the
 * agent's to choose, and a glob with several `**` as a backtracking JavaScript RegExp takes time
 * polynomial in their length.
 */
export function globToRegExp(glob: string): { test(path: string): boolean } {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === '*' && glob[i + 1] === '*') {
      const atStart = i === 0 || glob[i - 1] === '/';
      i++;
      if (atStart && glob[i + 1] === '/') {
        re += '(?:.*/)?';
        i++;
      } else if (atStart && re.endsWith('/') && i === glob.length - 1) {
        // `lib/**` also matches `lib` itself.
        re = `${re.slice(0, -1)}(?:/.*)?`;
      } else {
        re += '.*';
      }
    } else if (c === '*') {
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        re += '\\[';
      } else {
        const body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        re += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else {
      re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
    }
  }
  return RE2JS.compile(`^${re}$`);
}
