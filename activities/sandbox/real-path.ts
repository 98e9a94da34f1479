import { realpathSync } from 'node:fs';

/** The real path of `p`, or `p` itself when it does not exist (yet). */
export function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
