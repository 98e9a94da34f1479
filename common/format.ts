import type { z } from 'zod';

/** One `path: message` line per zod issue, for errors that name the field at fault. */
export function zodIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
    return `${path}: ${issue.message}`;
  });
}
