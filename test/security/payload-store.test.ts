import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { protectedFolders, protectedPaths } from '../../activities/sandbox/protected';
import { runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';

/**
 * The claim check's store (LOOPWRIGHT_PAYLOAD_STORE, crypto/claim-check.ts) holds every run's
 * spec, model calls and record in clear when there is no key ring: like the transcripts, it is
 * the worker's own, and no command of any agent reads it, whether it lies outside the workspace or in it.
 */
const CANARY = 'tok-payload-store-3a9f51';
let dir: string;
beforeEach(() => {
  // Not under /tmp: every command has a private /tmp of its own, which would hide the store anyway.
  dir = realpathSync(mkdtempSync('/var/tmp/lw-payload-store-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A store with one payload of another run's, as the claim check writes it. */
function storeAt(at: string): void {
  mkdirSync(path.join(at, 'ab'), { recursive: true });
  writeFileSync(path.join(at, 'ab', `ab${'0'.repeat(62)}`), `{"task":"${CANARY}"}`);
}

const look = (store: string) =>
  `cat "${store}"/*/* 2>&1; ls -la "${store}" 2>&1; grep -r "${CANARY.slice(0, 12)}" "${store}" 2>&1; echo end`;

test('an agent command cannot read the payload store, outside its workspace or inside it (where it could without the setting)', async () => {
  const ws = path.join(dir, 'ws');
  mkdirSync(ws);
  const outside = path.join(dir, 'payloads');
  const inside = path.join(ws, '.payloads');
  storeAt(outside);
  storeAt(inside);
  for (const store of [outside, inside]) {
    const masked = await runShell(toolContext(sandboxIn(dir, { LOOPWRIGHT_PAYLOAD_STORE: store }), ws), look(store));
    expect(masked).toContain('end');
    expect(masked).not.toContain(CANARY);
  }
  // The control: in the workspace, the same command without the setting reads it, so the mask is
  // what keeps it out (outside, the sandbox's layout shows nothing of the folder anyway).
  const open = await runShell(toolContext(sandboxIn(dir), ws), look(inside));
  expect(open).toContain(CANARY);
  expect(protectedPaths({ LOOPWRIGHT_PAYLOAD_STORE: outside })).toContain(outside);
  expect(protectedFolders({ LOOPWRIGHT_PAYLOAD_STORE: outside })).toContain(outside);
});
