import { XMLParser } from 'fast-xml-parser';
import type { TestOutcome, TestResult } from '../../common/test-results';
import { clip, LIMITS, lineOf, relativeFile, TestResultsError } from './limits';

/** How to read a JUnit XML report. */
export interface JunitOptions {
  /** The workspace root: absolute `file` attributes inside it become relative. */
  workspace: string;
  /** `pytest` reads pytest's dialect (module and class names, 0-based lines, xfail); `junit` any other producer. */
  dialect?: 'pytest' | 'junit';
  /** Whether a file (relative to the workspace) exists: maps pytest's dotted class names to files when the report has no `file`. */
  fileExists?: (file: string) => boolean;
}

const ARRAYS = new Set(['testsuites', 'testsuite', 'testcase', 'failure', 'error', 'skipped']);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  textNodeName: '#text',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  // XML's five entities, and (through htmlEntities) character references such as pytest's `&#10;`
  // and HTML's named ones: a fixed table, nothing declared by the document (a DOCTYPE is refused).
  processEntities: true,
  htmlEntities: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: 64,
  isArray: (name, _path, _leaf, isAttribute) => !isAttribute && ARRAYS.has(name),
});

type Node = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The message of a `<failure>`/`<error>`/`<skipped>`: its `message` attribute, else its text. */
function messageOf(children: unknown[]): string | undefined {
  for (const c of children) {
    if (typeof c === 'string' && c.trim()) return c;
    if (c && typeof c === 'object') {
      const text = str((c as Node).message) ?? str((c as Node)['#text']);
      if (text?.trim()) return text;
    }
  }
  return undefined;
}

/** pytest's `classname` (`tests.test_math.TestOuter`) as the classes inside the test file (`TestOuter`). */
function pytestClasses(
  classname: string,
  file: string | null,
  fileExists?: (f: string) => boolean,
): { file: string | null; classes: string[] } {
  const parts = classname.split('.');
  if (file) {
    const module = file.replace(/\.py$/, '').split('/').join('.');
    if (classname === module) return { file, classes: [] };
    if (classname.startsWith(`${module}.`)) return { file, classes: classname.slice(module.length + 1).split('.') };
    return { file, classes: [classname] };
  }
  // xunit2 reports have no file: the longest leading part of the dotted name that is a .py file.
  for (let i = parts.length; i > 0 && fileExists; i--) {
    const candidate = `${parts.slice(0, i).join('/')}.py`;
    if (fileExists(candidate)) return { file: candidate, classes: parts.slice(i) };
  }
  return { file: null, classes: classname ? [classname] : [] };
}

function testcaseResult(tc: Node, opts: JunitOptions): TestResult | undefined {
  const own = str(tc.name);
  if (own === undefined) return undefined;
  const classname = str(tc.classname) ?? str(tc.class) ?? '';
  const given = str(tc.file);
  let file = given ? relativeFile(given, opts.workspace) : null;
  let name: string;
  let line = lineOf(tc.line);
  const failures = [...list(tc.failure), ...list(tc.error)];
  const skipped = list(tc.skipped);
  if (opts.dialect === 'pytest') {
    const zeroBased = str(tc.line); // pytest's locations are 0-based
    line = zeroBased !== undefined && /^\d{1,9}$/.test(zeroBased) ? Number(zeroBased) + 1 : undefined;
    if (classname === '') {
      // A file that failed to collect: `name` is its module (`tests.test_broken`).
      const mapped = file ?? pytestClasses(own, null, opts.fileExists).file;
      file = mapped;
      name = mapped ?? own;
    } else {
      const where = pytestClasses(classname, file, opts.fileExists);
      file = where.file;
      name = [...where.classes, own].join(' > ');
    }
  } else {
    name = classname && classname !== own ? `${classname} > ${own}` : own;
  }
  let outcome: TestOutcome = 'passed';
  if (failures.length) outcome = 'failed';
  else if (skipped.length) {
    const xfail =
      opts.dialect === 'pytest' &&
      skipped.some((s) => s && typeof s === 'object' && (s as Node).type === 'pytest.xfail');
    outcome = xfail ? 'todo' : 'skipped';
  }
  const result: TestResult = { file, name: clip(name, LIMITS.name), outcome };
  if (line) result.line = line;
  const message = outcome === 'failed' ? messageOf(failures) : undefined;
  if (message) result.message = clip(message);
  return result;
}

/**
 * The results in a JUnit XML report: `<testsuites>` or `<testsuite>` at the top, suites nested
 * in any depth, one `<testcase>` per test. A test with a `<failure>` or `<error>` failed, one
 * with `<skipped>` was skipped, any other passed. Its name is `classname > name` (just `name`
 * when the two are equal or there is no classname), its file the `file` attribute when there is
 * one (relative to the workspace), else null.
 *
 * pytest's dialect (`--junitxml`, best with `-o junit_family=xunit1`, which adds `file` and
 * `line`): the name is the classes inside the file and the test (`TestOuter > test_x`, or
 * `test_add[1-2]` for a parametrized one), xfail is todo, an error in setup or teardown is a
 * failure, and a file that failed to collect is a failed test named by the file. Lines are 1-based.
 *
 * The report was written by a process that ran the agent's code: a DOCTYPE (entity declarations)
 * is refused, the size is capped, and nesting is bounded.
 */
export function parseJunitXml(text: string, opts: JunitOptions): TestResult[] {
  if (text.length > LIMITS.fileBytes)
    throw new TestResultsError(`the JUnit XML report is larger than ${LIMITS.fileBytes} characters`);
  if (/<!DOCTYPE|<!ENTITY/i.test(text))
    throw new TestResultsError(
      'the JUnit XML report has a DOCTYPE or entity declarations, which JUnit reports never need: it is not read',
    );
  let doc: Node;
  try {
    doc = parser.parse(text) as Node;
  } catch (err) {
    throw new TestResultsError(
      `the JUnit XML report is not well-formed XML (${((err as Error).message.split('\n')[0] ?? '').slice(0, 200)})`,
    );
  }
  const results: TestResult[] = [];
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object' || results.length >= LIMITS.results) return;
    const n = node as Node;
    for (const tc of list(n.testcase)) {
      if (results.length >= LIMITS.results) return;
      if (tc && typeof tc === 'object') {
        const r = testcaseResult(tc as Node, opts);
        if (r) results.push(r);
      }
    }
    for (const child of [...list(n.testsuites), ...list(n.testsuite)]) visit(child);
  };
  if (!Array.isArray(doc.testsuites) && !Array.isArray(doc.testsuite)) {
    throw new TestResultsError(
      'the XML report has neither <testsuites> nor <testsuite> at the top: it is not JUnit XML',
    );
  }
  visit(doc);
  return results;
}
