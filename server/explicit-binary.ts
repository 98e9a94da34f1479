import { resolve } from 'path';
import { ConfigError } from '../common/errors';
import { isExecutableFile } from './binary-locator';

/**
 * The binary that `env[envVar]` names, as an absolute path, or undefined when the variable is
 * unset or blank. `check` runs the file and says why it does not work as `title` (undefined when
 * it does). Throws a one-line {@link ConfigError} when the path is not an executable file or
 * fails the check: an explicit choice that does not work is never silently replaced.
 */
export async function explicitBinary(
  envVar: string,
  title: string,
  env: NodeJS.ProcessEnv,
  check: (path: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const explicit = env[envVar]?.trim();
  if (!explicit) return undefined;
  const path = resolve(explicit);
  const reason = isExecutableFile(path) ? await check(path) : 'not an executable file';
  if (reason)
    throw new ConfigError(
      `${envVar} is set to ${explicit}, which does not work as ${title} (${reason}): point it at a ${title} binary or unset it`,
    );
  return path;
}
