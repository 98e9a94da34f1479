import { createHash } from 'node:crypto';

/** sha256 of a rubric (its items in order), as pinned at a run's start and recorded by every verdict. */
export function hashRubric(rubric: readonly string[]): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(rubric)).digest('hex')}`;
}
