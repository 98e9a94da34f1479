import { workerGit } from '../../git/worker-git';

/**
 * The parts of a `package.json` that decide how tests run: the scripts (`npm test` runs
 * `pretest`, `test` and `posttest`, and any of them can run anything, such as a preload that
 * patches the code under test or a `sed` over it), the runners' own configuration keys, and the
 * module type. A fix may need a dependency, so `package.json` is not test infrastructure as a
 * whole; these keys are: the gate runs base's values of them, and the change policy counts a
 * change to them as a change to the runner's configuration.
 */
export const RUNNER_KEYS = ['scripts', 'jest', 'mocha', 'ava', 'c8', 'nyc', 'tap', 'babel', 'type'] as const;

const MANIFEST = /(^|\/)package\.json$/;

/** Whether a path (relative, `/` separators) is a package manifest. */
export function isManifest(file: string): boolean {
  return MANIFEST.test(file);
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

/**
 * What a change to a manifest changes of how tests run, as `scripts.pretest added`-style items
 * (empty when nothing). `before`/`after` are the texts (undefined: no such file). A manifest
 * that is not a JSON object counts as changing everything it could.
 */
export function runnerFieldChanges(before: string | undefined, after: string | undefined): string[] {
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

/**
 * The candidate's manifest with base's runner keys (base's value, or none where base had none),
 * for the gate's overlay; undefined when either is not a JSON object (the caller then uses
 * base's manifest whole).
 */
export function withBaseRunnerFields(before: string | undefined, after: string): string | undefined {
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

/** A blob's text (capped by git's output limit), for reading manifests. */
export async function blobText(repo: string, oid: string): Promise<string> {
  return workerGit(repo, ['cat-file', 'blob', oid], { maxBuffer: 16 * 1024 * 1024 });
}

/** Writes `text` as a blob of the repository and returns its id. */
export async function writeBlob(repo: string, text: string): Promise<string> {
  return (await workerGit(repo, ['hash-object', '-w', '--stdin'], { input: text })).trim();
}
