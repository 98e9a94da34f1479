import { existsSync } from 'node:fs';
import path from 'node:path';
import { preloadModules } from './preload';

/** The prebuilt bundles `npm run build` writes beside dist/workers. */
export const BUNDLE_FILES = { plain: 'workflow-bundle.js', encrypted: 'workflow-bundle-encrypted.js' } as const;

/**
 * Where the worker gets its workflow code: the prebuilt bundle that `npm run build` writes
 * (dist/workflow-bundle.js, or LOOPWRIGHT_WORKFLOW_BUNDLE), else the sources, bundled at start.
 *
 * An encrypting worker (a key ring configured) needs workflow code bundled with the failure
 * converter that encodes failure messages and stack traces (`failureConverterPath`: Temporal
 * bundles converters into workflow code, so a worker's own converter does not reach failures a
 * workflow raises): dist/workflow-bundle-encrypted.js, or LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED,
 * else the sources, which the worker bundles with its data converter's failureConverterPath. Either
 * way the pure `common/` modules are preloaded (workers/preload.ts).
 */
export function workflowSource(
  env: Record<string, string | undefined>,
  encrypted = false,
): { workflowBundle: { codePath: string } } | { workflowsPath: string; bundlerOptions: { preloadModules: string[] } } {
  const prebuilt = encrypted
    ? env.LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED || path.join(__dirname, '..', BUNDLE_FILES.encrypted)
    : env.LOOPWRIGHT_WORKFLOW_BUNDLE || path.join(__dirname, '..', BUNDLE_FILES.plain);
  if (existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: require.resolve('../workflows'), bundlerOptions: { preloadModules: preloadModules() } };
}
