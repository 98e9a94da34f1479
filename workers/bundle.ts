import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../crypto/codec';
import { preloadModules } from './preload';
import { BUNDLE_FILES } from './workflow-bundle';

const QUIET = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

/**
 * The workflow code workers load: plain, or (`encrypted`) with the failure converter that
 * encodes failure messages and stack traces, which an encrypting worker needs (see workflowSource).
 */
export async function workflowBundleCode(opts: { encrypted: boolean; logger?: typeof QUIET }): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    ...(opts.encrypted ? { failureConverterPath: FAILURE_CONVERTER_PATH } : {}),
    preloadModules: preloadModules(),
    logger: opts.logger ?? QUIET,
  });
  return code;
}

/**
 * Writes the workflow bundle that workers load at start (so a worker starts in about a second
 * instead of bundling with webpack each time). Run by `npm run build`.
 */
export async function writeWorkflowBundle(outFile: string, encrypted = false): Promise<string> {
  await writeFile(outFile, await workflowBundleCode({ encrypted }));
  return outFile;
}

if (require.main === module) {
  // Both bundles: dist/workflow-bundle.js and, for workers with a key ring, dist/workflow-bundle-encrypted.js.
  const out = process.argv[2] ?? path.join(__dirname, '..', BUNDLE_FILES.plain);
  const encryptedOut = process.argv[3] ?? path.join(path.dirname(out), BUNDLE_FILES.encrypted);
  Promise.all([writeWorkflowBundle(out), writeWorkflowBundle(encryptedOut, true)]).then(
    (files) => files.forEach((file) => console.log(`workflow bundle written to ${path.relative(process.cwd(), file)}`)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
