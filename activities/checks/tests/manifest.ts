import { workerGit } from '../../git/worker-git';

/**
 * The parts of a package manifest that decide how tests run, though the rest of it is the fix's
 * business (a fix may need a dependency):
 * - `package.json`: the scripts (`npm test` runs `pretest`, `test` and `posttest`, and any of
 *   them can run anything, such as a preload that patches the code under test or a `sed` over
 *   it), the runners' own configuration keys, the module type, and `imports`, which maps the
 *   `#name` specifiers a test may load its helpers by (`require('#helpers')`) to any file; and
 *   what the package's own name resolves to: `exports` (a test may load the package, or a helper
 *   it exports such as `calc/check`, by its name: node resolves that self-reference through
 *   `exports` before any node_modules, so a change that re-pointed `./check` to a stub that
 *   asserts nothing passed base's tests), `main` (`require('..')`), and `module` and `browser`,
 *   which vitest and jest's browser environments read in place of `main`;
 * - `pyproject.toml`: pytest's tables (`[tool.pytest.ini_options]`, `[tool.pytest]`, and any
 *   `tool.pytest` key elsewhere), where `addopts = "-p plugin"` loads a plugin that can turn
 *   failures into passes; `setup.cfg`: its `[tool:pytest]` section;
 * - `go.mod`: its `go`, `toolchain` and `godebug` lines, which decide the language's semantics
 *   for base's tests too (`go 1.21` gives a loop one variable for all its iterations, so each
 *   parallel subtest of a table checks the last case only, and the failing case passes), and its
 *   `replace` lines, which put any folder in place of a module base's tests import.
 * The gate runs base's versions of these parts, and the change policy counts a change to them
 * as a change to the runner's configuration.
 */
export const RUNNER_KEYS = [
  'scripts',
  'jest',
  'mocha',
  'ava',
  'c8',
  'nyc',
  'tap',
  'babel',
  'type',
  'imports',
  'exports',
  'main',
  'module',
  'browser',
] as const;

const PACKAGE_JSON = /(^|\/)package\.json$/;
const PYPROJECT = /(^|\/)pyproject\.toml$/;
const SETUP_CFG = /(^|\/)setup\.cfg$/;
const GO_MOD = /(^|\/)go\.mod$/;

/** Whether a path (relative, `/` separators) is a package manifest. */
export function isManifest(file: string): boolean {
  return PACKAGE_JSON.test(file) || PYPROJECT.test(file) || SETUP_CFG.test(file) || GO_MOD.test(file);
}

type Json = Record<string, unknown>;

function parseObject(text: string | undefined): Json | undefined {
  if (text === undefined) return {};
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
  } catch {
    return undefined;
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function packageJsonChanges(before: string | undefined, after: string | undefined): string[] {
  const a = parseObject(before);
  const b = parseObject(after);
  if (!a || !b) return same(before, after) ? [] : ['its runner keys (not a JSON object)'];
  const out: string[] = [];
  for (const key of RUNNER_KEYS) {
    const x = a[key];
    const y = b[key];
    if (same(x, y)) continue;
    if (key === 'scripts' && isPlain(x ?? {}) && isPlain(y ?? {})) {
      const xs = (x ?? {}) as Json;
      const ys = (y ?? {}) as Json;
      for (const name of new Set([...Object.keys(xs), ...Object.keys(ys)]))
        if (!same(xs[name], ys[name]))
          out.push(`scripts.${name} ${!(name in xs) ? 'added' : !(name in ys) ? 'removed' : 'changed'}`);
    } else out.push(`${key} ${x === undefined ? 'added' : y === undefined ? 'removed' : 'changed'}`);
  }
  return out;
}

function isPlain(v: unknown): v is Json {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function packageJsonWithBase(before: string | undefined, after: string): string | undefined {
  const a = parseObject(before);
  const b = parseObject(after);
  if (!a || !b) return undefined;
  const merged: Json = { ...b };
  for (const key of RUNNER_KEYS) {
    if (key in a) merged[key] = a[key];
    else delete merged[key];
  }
  return `${JSON.stringify(merged, null, 2)}\n`;
}

/**
 * What a change to the manifest `file` changes of how tests run, as `scripts.pretest
 * added`-style items (empty when nothing). `before`/`after` are its texts (undefined: no such
 * file). A package.json that is not a JSON object counts as changing everything it could.
 */
export function runnerFieldChanges(file: string, before: string | undefined, after: string | undefined): string[] {
  if (PACKAGE_JSON.test(file)) return packageJsonChanges(before, after);
  const go = GO_MOD.test(file);
  const a = go ? goRunnerPart(before) : pytestPart(file, before);
  const b = go ? goRunnerPart(after) : pytestPart(file, after);
  if (a === b) return [];
  return [
    `its ${go ? 'go, toolchain, godebug or replace lines' : 'pytest configuration'} ${a === '' ? 'added' : b === '' ? 'removed' : 'changed'}`,
  ];
}

/**
 * The change's manifest with base's runner parts, for the gate's overlay: package.json with
 * base's runner keys (base's value, or none where base had none); a pyproject.toml or setup.cfg
 * whose pytest part changed, or a go.mod whose go, toolchain, godebug or replace lines changed, is
 * base's whole (undefined: the caller uses base's file, or none).
 */
export function withBaseRunnerFields(file: string, before: string | undefined, after: string): string | undefined {
  return PACKAGE_JSON.test(file) ? packageJsonWithBase(before, after) : undefined;
}

/**
 * The lines of a go.mod that decide how its code and tests build, besides what they require: the
 * `go`, `toolchain` and `godebug` directives and `replace`, on one line or in a block. Comments and
 * spacing do not count.
 */
function goRunnerPart(text: string | undefined): string {
  if (text === undefined) return '';
  const kept: string[] = [];
  let block: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw
      .replace(/\/\/.*$/, '')
      .trim()
      .replace(/\s+/g, ' ');
    if (line === '') continue;
    if (block !== undefined) {
      if (line === ')') block = undefined;
      else if (block !== '') kept.push(`${block} ${line}`);
      continue;
    }
    const verb = /^([a-z]+)\b/.exec(line)?.[1] ?? '';
    const runner = ['go', 'toolchain', 'godebug', 'replace'].includes(verb);
    if (line.endsWith('(')) block = runner ? verb : '';
    else if (runner) kept.push(line);
  }
  return kept.join('\n');
}

const HEADER = /^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(?:#.*)?$/;

/**
 * The lines of a pyproject.toml or setup.cfg that configure pytest: pytest's sections, and in
 * a TOML file any line outside them that names pytest (a dotted `tool.pytest...` key, an inline
 * table under `[tool]`). Comments and blank lines do not count.
 */
function pytestPart(file: string, text: string | undefined): string {
  if (text === undefined) return '';
  const toml = PYPROJECT.test(file);
  const kept: string[] = [];
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = HEADER.exec(line);
    if (header) {
      section = (header[1] ?? '').replace(/["'\s]/g, '');
      if (isPytestSection(section, toml)) kept.push(`[${section}]`);
      continue;
    }
    if (isPytestSection(section, toml) || (toml && /pytest/i.test(line))) kept.push(line);
  }
  return kept.join('\n');
}

function isPytestSection(section: string, toml: boolean): boolean {
  return toml ? section === 'tool.pytest' || section.startsWith('tool.pytest.') : section === 'tool:pytest';
}

/** A blob's text (capped by git's output limit), for reading manifests. */
export async function blobText(repo: string, oid: string): Promise<string> {
  return workerGit(repo, ['cat-file', 'blob', oid], { maxBuffer: 16 * 1024 * 1024 });
}

/** Writes `text` as a blob of the repository and returns its id. */
export async function writeBlob(repo: string, text: string): Promise<string> {
  return (await workerGit(repo, ['hash-object', '-w', '--stdin'], { input: text })).trim();
}
