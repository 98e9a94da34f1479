import { workerGit } from '../../git/worker-git';

const IMPORT_LINE = /^\s*(?:from\s+([A-Za-z_]\w*)[\w.]*\s+import\b|import\s+(.+))/;

/**
 * The top-level module names that `import` and `from ... import` lines of the Python files of
 * `tree` name (`numpy` for `import numpy.testing as npt`, `fractions` for `from fractions import
 * Fraction`): what base's tests and code load from outside, which a module the change adds on
 * pytest's sys.path would stand in for (see pythonShadows). Base is the operator's code, so its
 * lines are read as written; a tree without Python files, or one git cannot search, names none.
 */
export async function pythonImports(repo: string, tree: string): Promise<Set<string>> {
  const names = new Set<string>();
  const out = await workerGit(
    repo,
    ['grep', '-h', '-I', '-E', '^[[:space:]]*(import|from)[[:space:]]+[A-Za-z_]', tree, '--', '*.py'],
    { maxBuffer: 64 * 1024 * 1024 },
  ).catch(() => ''); // git grep exits 1 when nothing matches
  for (const line of out.split('\n')) {
    const m = IMPORT_LINE.exec(line);
    if (m?.[1]) names.add(m[1]);
    for (const part of m?.[2]?.split(',') ?? []) {
      const name = /^\s*([A-Za-z_]\w*)/.exec(part)?.[1];
      if (name) names.add(name);
    }
  }
  return names;
}
