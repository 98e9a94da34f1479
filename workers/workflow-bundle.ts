import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Where the worker gets its workflow code: the prebuilt bundle that `npm run build` writes
 * (dist/workflow-bundle.js, or LOOPWRIGHT_WORKFLOW_BUNDLE), else the sources, bundled at start.
 */
export function workflowSource(env: Record<string, string | undefined>): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const prebuilt = env.LOOPWRIGHT_WORKFLOW_BUNDLE || path.join(__dirname, '..', 'workflow-bundle.js');
  if (existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: require.resolve('../workflows') };
}
