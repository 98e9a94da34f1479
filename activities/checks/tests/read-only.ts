import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * What of a checkout the gate's overlay run may read but not change: its test infrastructure.
 * The change's code runs inside that run, and where it could write, it could rewrite base's test
 * files, helpers and fixtures (or the held-out tests, or the canary) before the runner loads them
 * (`node --test` and pytest load files one after another), or add a file a loader takes in their
 * place (`test/helpers` before `test/helpers.js`, a `conftest.py` pytest loads as it enters the
 * folder): base's tests would no longer run as base wrote them. So every folder that holds test
 * infrastructure is mounted read-only, nothing in it changed or added: the outermost one that is
 * test infrastructure as a whole (`test/`, `tests/`, `fixtures/`, `node_modules/`), else the
 * file's own (`src/` for `src/math.test.js`); at the root of the checkout, the file alone.
 */

/** A name no file pattern of test infrastructure matches by itself: a path ending in it is infrastructure by its folders. */
const PROBE = 'loopwright-probe';

/**
 * The paths (absolute, in `dir`) to mount read-only: for each file of `files` (relative, `/`
 * separators) that `isInfra` matches, its outermost folder that is infrastructure as a whole, else
 * its own folder, or at the root the file itself; and every path of `extra` (the gate's own files
 * and folders). Only paths that are plainly inside `dir` count: a symlink is never followed out of
 * the checkout.
 */
export function readOnlyInfra(
  dir: string,
  files: Iterable<string>,
  isInfra: (file: string) => boolean,
  extra: string[] = [],
): string[] {
  const picked = new Set<string>(extra);
  for (const file of files) {
    if (!isInfra(file)) continue;
    const parts = file.split('/');
    const whole = parts.findIndex((_, i) => i > 0 && isInfra(`${parts.slice(0, i).join('/')}/${PROBE}`));
    picked.add(parts.slice(0, whole === -1 ? Math.max(parts.length - 1, 1) : whole).join('/'));
  }
  const real = realpathSync(dir);
  const sorted = [...picked].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const rel of sorted) {
    if (kept.some((k) => rel.startsWith(`${k}/`))) continue;
    const abs = path.join(real, rel);
    try {
      const st = lstatSync(abs);
      if ((st.isFile() || st.isDirectory()) && realpathSync(abs) === abs) kept.push(rel);
    } catch {
      // not in the checkout (a tree entry git could not write): nothing to protect
    }
  }
  return kept.map((rel) => path.join(real, rel));
}
