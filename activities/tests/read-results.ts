import { constants, realpathSync } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { TestResult } from '../../common/test-results';
import { ConfigError } from '../../common/errors';
import { isWithin } from '../sandbox/profile';
import { LIMITS, TestResultsError } from './limits';
import { parseJunitXml } from './parse-junit';

// A results file lies in a folder the sandboxed command could write: a symlink or a FIFO planted
// there is refused, not followed or waited on.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * A results file's text, or undefined when there is none. Only a regular file of at most
 * `cap` bytes is read; anything else is a TestResultsError that says why.
 */
export async function readResultsFile(
  file: string,
  cap: number = LIMITS.fileBytes,
  since?: number,
): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(file, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP')
      throw new TestResultsError(`${path.basename(file)} is a symlink, not the runner's report: refused`);
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new TestResultsError(`${path.basename(file)} is not a regular file: refused`);
    if (since !== undefined && st.mtimeMs < since) return undefined;
    if (st.size > cap)
      throw new TestResultsError(`${path.basename(file)} has ${st.size} bytes, more than the ${cap} read`);
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await handle.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Where `junitPath` (relative to the workspace) is, checked: a path that leads outside the
 * workspace, by `..`, an absolute path or a symlink, is a ConfigError.
 */
export function junitTarget(workspace: string, junitPath: string): string {
  if (path.isAbsolute(junitPath))
    throw new ConfigError(`junitPath ${junitPath} must be relative to the repository, not absolute`);
  const target = path.resolve(workspace, junitPath);
  if (!isWithin(workspace, target)) throw new ConfigError(`junitPath ${junitPath} leads outside the repository`);
  return target;
}

/** The JUnit XML files at `target`: the file itself, or the `.xml` files below the folder (no symlinks followed). */
async function junitFiles(target: string): Promise<string[]> {
  const st = await lstat(target).catch(() => undefined);
  if (!st) return [];
  if (st.isFile()) return [target];
  if (!st.isDirectory()) return [];
  const found: string[] = [];
  const walk = async (dir: string, depth: number) => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (found.length >= LIMITS.junitFiles) return;
      const p = path.join(dir, e.name);
      if (e.isFile() && e.name.toLowerCase().endsWith('.xml')) found.push(p);
      else if (e.isDirectory() && depth < LIMITS.junitDepth) await walk(p, depth + 1);
    }
  };
  await walk(target, 0);
  return found;
}

/**
 * The results in the JUnit XML the run wrote at `junitPath` (a file, or a folder searched for
 * `.xml` files): files older than the run (`since`, ms) are stale reports and are skipped, and
 * so are files that are not JUnit XML. Bounded in files, bytes and results; every file that
 * could not be read is named in `problems`.
 */
export async function readJunitReports(
  workspace: string,
  junitPath: string,
  since: number,
): Promise<{ results: TestResult[]; problems: string[]; files: number }> {
  const target = junitTarget(workspace, junitPath);
  const real = (() => {
    try {
      return realpathSync(target);
    } catch {
      return undefined;
    }
  })();
  if (real === undefined) return { results: [], problems: [], files: 0 };
  if (!isWithin(workspace, real))
    throw new ConfigError(`junitPath ${junitPath} leads outside the repository through a symlink`);
  const results: TestResult[] = [];
  const problems: string[] = [];
  let bytes = 0;
  let files = 0;
  for (const file of await junitFiles(real)) {
    if (results.length >= LIMITS.results) break;
    const shown = path.relative(workspace, file).split(path.sep).join('/');
    try {
      const { size } = await lstat(file);
      if (bytes + size > LIMITS.junitBytes) {
        problems.push(`${shown} and what follows were not read: the reports hold more than ${LIMITS.junitBytes} bytes`);
        break;
      }
      const text = await readResultsFile(file, LIMITS.fileBytes, since);
      if (text === undefined) continue;
      bytes += text.length;
      files++;
      results.push(...parseJunitXml(text, { workspace, dialect: 'junit' }));
    } catch (err) {
      if (!(err instanceof TestResultsError)) throw err;
      problems.push(`${shown}: ${err.message}`);
    }
  }
  return { results: results.slice(0, LIMITS.results), problems, files };
}
