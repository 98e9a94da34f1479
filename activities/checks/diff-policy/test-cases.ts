/**
 * Counting test cases and finding skip/focus markers in a test file's text. Both look at the
 * code only: comments and the contents of string literals are blanked first (keeping lengths
 * and line breaks), so a commented-out test does not count and a test titled "test(1)" counts once.
 */

/** One declaration per match: `test(`, `it(` (also `test.only(`, `xit(` ...), `def test_*(`, `func Test*(`. */
const TEST_CASE = [
  /(?<![\w$.])(?:test|it|xit|xtest|fit)(?:\.(?:skip|only|todo|concurrent|failing))*\s*\(/g,
  /\bdef\s+test\w*\s*\(/g,
  /\bfunc\s+Test\w*\s*\(/g,
];

/** Markers that skip or focus tests, in JavaScript/TypeScript, Python and Go test files. */
const SKIP_MARKERS = [
  /\.(?:skip|only|todo)\s*[(.`]/,
  /(?<![\w$.])(?:xit|xtest|xdescribe|xcontext|xsuite|fit|fdescribe)\s*\(/,
  // node:test options: `{ skip: true }`, `{ skip: 'why' }`, `{ only: true }`, `{ todo: true }`.
  /(?<![\w$.])(?:skip|only|todo)\s*:\s*(?!false\b|null\b|undefined\b|0\b)[^\s,})]+/,
  /@pytest\.mark\.(?:skip|skipif|xfail)\b/,
  /@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b/,
  /^\s*@(?:skip|skipIf|skipUnless|expectedFailure)\b/,
  /\bpytest\.skip\s*\(/,
  /\.skipTest\s*\(/,
  /\.Skip(?:f|Now)?\s*\(/,
];

/** Where a marker was added: 1-based line, the marker as written, and the line's text. */
export interface SkipMarker {
  line: number;
  marker: string;
  text: string;
}

/** Number of test case declarations in a test file. */
export function countTestCases(text: string, file: string): number {
  const code = stripCode(text, file);
  return TEST_CASE.reduce((n, re) => n + (code.match(re)?.length ?? 0), 0);
}

/** Skip/focus markers on the given lines (all lines when `lines` is `'all'`). */
export function findSkipMarkers(text: string, file: string, lines: Set<number> | 'all'): SkipMarker[] {
  const code = stripCode(text, file).split('\n');
  const original = text.split('\n');
  const found: SkipMarker[] = [];
  code.forEach((line, i) => {
    if (lines !== 'all' && !lines.has(i + 1)) return;
    for (const re of SKIP_MARKERS) {
      const m = re.exec(line);
      if (m) {
        // Offsets agree (blanking keeps lengths): name the marker as written, string and all.
        found.push({ line: i + 1, marker: original[i].slice(m.index, m.index + m[0].length).trim(), text: original[i].trim().slice(0, 120) });
        break;
      }
    }
  });
  return found;
}

/**
 * Blanks comments and string contents with spaces, keeping line breaks and quote characters.
 * Python: `#` comments, '...', "...", '''...''', """...""". Otherwise C-like (JavaScript,
 * TypeScript, Go, Java ...): `//` and `/* *\/` comments, '...', "..." and `...`. Single-quoted
 * and double-quoted strings end at the line's end, so a quote in a regex literal blanks one line at most.
 */
export function stripCode(text: string, file: string): string {
  const python = /\.pyw?$/.test(file);
  const out = text.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to && k < out.length; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const two = text.slice(i, i + 2);
    const three = text.slice(i, i + 3);
    if ((python && c === '#') || (!python && two === '//')) {
      const end = lineEnd(text, i);
      blank(i, end);
      i = end;
    } else if (!python && two === '/*') {
      const close = text.indexOf('*/', i + 2);
      const end = close === -1 ? text.length : close + 2;
      blank(i, end);
      i = end;
    } else if (python && (three === '"""' || three === "'''")) {
      const close = text.indexOf(three, i + 3);
      const end = close === -1 ? text.length : close;
      blank(i + 3, end);
      i = end + 3;
    } else if (c === '"' || c === "'" || (!python && c === '`')) {
      const end = stringEnd(text, i + 1, c, c !== '`');
      blank(i + 1, end);
      i = end + 1;
    } else {
      i++;
    }
  }
  return out.join('');
}

function lineEnd(text: string, from: number): number {
  const nl = text.indexOf('\n', from);
  return nl === -1 ? text.length : nl;
}

/** Index of the closing quote (or of the line break that ends an unclosed single-line string). */
function stringEnd(text: string, from: number, quote: string, singleLine: boolean): number {
  let i = from;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') i += 2;
    else if (c === quote) return i;
    else if (singleLine && c === '\n') return i;
    else i++;
  }
  return text.length;
}
