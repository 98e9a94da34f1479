import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes the workflow bundle that workers load at start (so a worker starts in about a second
 * instead of bundling with webpack each time). Run by `npm run build`.
 */
export async function writeWorkflowBundle(outFile: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
  });
  await writeFile(outFile, code);
  return outFile;
}

if (require.main === module) {
  const out = process.argv[2] ?? path.join(__dirname, '..', 'workflow-bundle.js');
  writeWorkflowBundle(out).then(
    (file) => console.log(`workflow bundle written to ${path.relative(process.cwd(), file)}`),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
