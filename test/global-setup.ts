import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initKeyFile } from '../crypto/key-file';
import { freePort, startDevServer, type DevServer } from '../server/dev-server';
import { findBubblewrap } from '../server/bubblewrap';
import { findTemporalCli } from '../server/temporal-binary';
import { workflowBundleCode } from '../workers/bundle';
import { freshPrebuiltBundles } from './helpers/prebuilt-bundles';

/**
 * One real Temporal dev server (installed by the project's own locator) and one workflow
 * bundle per test run. Test files reach them through LOOPWRIGHT_TEST_ADDRESS and
 * LOOPWRIGHT_WORKFLOW_BUNDLE; global-teardown stops the server by the pid started here.
 * The server serves its Web UI on a free port (LOOPWRIGHT_TEST_UI_URL) for test/ui, which
 * checks what a person browsing runs sees; nothing else needs the server to be headless.
 * With LOOPWRIGHT_TEST_EXTERNAL_ADDRESS set (test/cluster/global-setup.ts sets it), the tests run
 * against that server instead, and no dev server is started.
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopwright-test-'));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // The sandbox for agent commands: installed here (as root, with apt-get) when the machine lacks it.
  if (!/^(off|none)$/i.test(process.env.LOOPWRIGHT_SANDBOX ?? '')) await findBubblewrap({ log });
  const cli = await findTemporalCli({ log });
  const external = process.env.LOOPWRIGHT_TEST_EXTERNAL_ADDRESS?.trim();
  const [port, uiPort] = await Promise.all([freePort(), freePort()]);
  const logger = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };
  // Two bundles, built as `npm run build` builds them (workers/bundle.ts): plain, and with the
  // encoding failure converter for workers with a key ring (test/crypto). The ones `npm run build`
  // just wrote to dist/ are copied when nothing they could be built from changed since (npm test
  // builds right before Jest); copied, so a build during the run does not change the suite's code.
  const prebuilt = freshPrebuiltBundles();
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  const encryptedBundlePath = path.join(dir, 'workflow-bundle-encrypted.js');
  if (prebuilt) {
    copyFileSync(prebuilt.plain, bundlePath);
    copyFileSync(prebuilt.encrypted, encryptedBundlePath);
    log(`workflow bundles: ${path.dirname(prebuilt.plain)}'s, built after the last change to the sources`);
  }
  const [server] = await Promise.all([
    external
      ? undefined
      : startDevServer({
          cli,
          dbFile: path.join(dir, 'temporal.db'),
          port,
          uiPort,
          logFile: path.join(dir, 'temporal.log'),
        }),
    prebuilt ? undefined : workflowBundleCode({ encrypted: false, logger }).then((b) => writeFileSync(bundlePath, b)),
    prebuilt
      ? undefined
      : workflowBundleCode({ encrypted: true, logger }).then((b) => writeFileSync(encryptedBundlePath, b)),
  ]);
  (globalThis as { __loopwrightServer?: DevServer }).__loopwrightServer = server;
  process.env.LOOPWRIGHT_TEST_DIR = dir;
  process.env.LOOPWRIGHT_TEST_ADDRESS = server?.address ?? external;
  if (server?.uiUrl) process.env.LOOPWRIGHT_TEST_UI_URL = server.uiUrl;
  process.env.LOOPWRIGHT_TEMPORAL_CLI = cli;
  process.env.LOOPWRIGHT_WORKFLOW_BUNDLE = bundlePath;
  process.env.LOOPWRIGHT_WORKFLOW_BUNDLE_ENCRYPTED = encryptedBundlePath;
  // Every client and worker of the suite encrypts with a ring of this run's own, as a deployment
  // does (never a developer's LOOPWRIGHT_KEYS); a test that needs clear payloads sets it empty.
  process.env.LOOPWRIGHT_KEYS = initKeyFile(path.join(dir, 'keys')).file;
  process.env.LOOPWRIGHT_TRANSCRIPTS = path.join(dir, 'transcripts');
  process.env.LOOPWRIGHT_WORKTREES = path.join(dir, 'worktrees');
  // Workers trust no allowed signers and no grants unless a test gives its own (never a developer's
  // .loopwright/allowed_signers), and clients sign nothing unless a test names a key.
  process.env.LOOPWRIGHT_ALLOWED_SIGNERS = '';
  process.env.LOOPWRIGHT_GRANTS = path.join(dir, 'grants');
  process.env.LOOPWRIGHT_SIGNING_KEY = '';
}
