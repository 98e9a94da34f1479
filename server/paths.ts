import { existsSync } from 'fs';
import { dirname, join } from 'path';

/**
 * The folder holding Loopwright's package.json, found by walking up from this file, so it is
 * the same from the TypeScript sources (`server/`) and from the compiled `dist/server/`.
 */
export function packageRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/**
 * Where Loopwright keeps its local state (dev server database, installed binaries, logs):
 * `LOOPWRIGHT_HOME` when set, else `<package root>/.loopwright`.
 */
export function loopwrightHome(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.LOOPWRIGHT_HOME;
  return home && home.trim() !== '' ? home : join(packageRoot(), '.loopwright');
}
