import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
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
 *
 * A prebuilt bundle comes with its build id, {@link bundleBuildId}; from the sources the SDK's
 * default (`@temporalio/worker@<version>+<sha256 of the bundle>`) stands.
 */
export function workflowSource(
  env: Record<string, string | undefined>,
  encrypted = false,
):
  | { workflowBundle: { codePath: string }; buildId: string }
  | { workflowsPath: string; bundlerOptions: { preloadModules: string[] } } {
  const prebuilt = encrypted
    ? env.LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED || path.join(__dirname, '..', BUNDLE_FILES.encrypted)
    : env.LOOPWRIGHT_WORKFLOW_BUNDLE || path.join(__dirname, '..', BUNDLE_FILES.plain);
  if (existsSync(prebuilt))
    return { workflowBundle: { codePath: prebuilt }, buildId: bundleBuildId(readFileSync(prebuilt)) };
  return { workflowsPath: require.resolve('../workflows'), bundlerOptions: { preloadModules: preloadModules() } };
}

/**
 * The worker's build id for a workflow bundle: `loopwright+` and the first 12 hex digits (48 bits)
 * of the bundle's SHA-256. Temporal writes it into every workflow task's started and completed
 * events (the Web UI shows it as the task's worker build); the SDK's default there is 87
 * characters (its package and version, the whole hash), about 0.6 KB of a 5-task run's history.
 * It is informational: Loopwright does not use worker versioning, so no task routing depends on
 * it, and 48 bits tell builds apart (a collision would only show two builds under one name).
 */
export function bundleBuildId(code: string | Buffer): string {
  return `loopwright+${createHash('sha256').update(code).digest('hex').slice(0, 12)}`;
}
