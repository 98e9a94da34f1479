import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError } from '../../common/errors';
import { privateFolder } from '../../server/private-folder';

/**
 * The worker's fixed folders under /tmp (`loopwright/`: scratch files with candidates, the
 * gate's checkouts, default workspaces; `loopwright-dotgit-<uid>/`: the .git stand-in's
 * registry) are its own: a local user who made the name first, or left a symlink there, gets
 * a refusal that says what to do, not the worker's files.
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync('/var/tmp/lw-private-folder-');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('a missing folder is made 0700, and an own folder with a wider mode is narrowed', () => {
  const made = privateFolder(path.join(dir, 'a', 'mine'));
  expect(statSync(made).mode & 0o777).toBe(0o700);
  const wide = path.join(dir, 'wide');
  mkdirSync(wide);
  chmodSync(wide, 0o777);
  privateFolder(wide);
  expect(statSync(wide).mode & 0o777).toBe(0o700);
});

test('a symlink in its place is refused, and nothing is written where it points', () => {
  const elsewhere = path.join(dir, 'elsewhere');
  mkdirSync(elsewhere);
  symlinkSync(elsewhere, path.join(dir, 'link'));
  expect(() => privateFolder(path.join(dir, 'link'))).toThrow(ConfigError);
  expect(() => privateFolder(path.join(dir, 'link'))).toThrow(
    /is a symlink, not the worker's own folder: remove it, or give the worker a temporary folder of its own \(TMPDIR\)/,
  );
  expect(readdirSync(elsewhere)).toEqual([]);
});

const root = process.getuid?.() === 0;
(root ? test : test.skip)('a folder another user made is refused (needs root to make one: chown)', () => {
  const theirs = path.join(dir, 'theirs');
  mkdirSync(theirs, { mode: 0o777 });
  chownSync(theirs, 65534, 65534);
  expect(() => privateFolder(theirs)).toThrow(/belongs to uid 65534, not to this worker's \(0\)/);
});

(root ? test : test.skip)(
  'a worker whose /tmp/loopwright another user holds runs no command: its sandbox says why (needs root to chown)',
  () => {
    // A process of its own: os.tmpdir() reads the real TMPDIR, which a jest test cannot set.
    const tmp = path.join(dir, 'tmp');
    mkdirSync(path.join(tmp, 'loopwright'), { recursive: true, mode: 0o777 });
    chownSync(path.join(tmp, 'loopwright'), 65534, 65534);
    const script = `
      const { createSandbox, sandboxConfigFromEnv } = require(${JSON.stringify(path.resolve('dist/activities/sandbox/sandbox.js'))});
      const sandbox = createSandbox(sandboxConfigFromEnv(process.env));
      sandbox.status().then(async (st) => {
        const ran = await sandbox.run(['true'], { workspace: ${JSON.stringify(dir)}, timeoutMs: 5000, capChars: 100 }).then(() => 'ran', (e) => e.constructor.name);
        console.log(JSON.stringify({ ...st, ran }));
      });`;
    const out = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' }),
    ) as { kind: string; reason?: string; ran: string };
    expect(out).toMatchObject({ kind: 'unavailable', ran: 'SandboxUnavailableError' });
    expect(out.reason).toBe(
      `${tmp}/loopwright belongs to uid 65534, not to this worker's (0): remove it, or give the worker a temporary folder of its own (TMPDIR)`,
    );
    expect(readdirSync(path.join(tmp, 'loopwright'))).toEqual([]);
  },
);
