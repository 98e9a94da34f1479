import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../helpers/cli';
import { databaseHolds } from '../crypto/encrypted-stack';
import { must } from '../../common/must';

/**
 * What `npm start` runs (`loopwright demo`), as a process with no terminal: the embedded dev
 * server (on the default ports 7233 and 8233, as a newcomer gets it), a worker, the scripted
 * model, the fix-test run, its approval (`--yes`) and the commit; `--exit` stops it all after.
 */
test('the demo verifies the fix, applies it as one keyed commit, prints the Web UI link, and stops cleanly', async () => {
  const home = mkdtempSync(path.join(tmpdir(), 'lw-demo-home-'));
  // LOOPWRIGHT_KEYS unset, as a newcomer has it: the demo makes its key ring.
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOOPWRIGHT_HOME: home,
    LOOPWRIGHT_TEMPORAL_CLI: undefined,
    TEMPORAL_CLI: process.env.LOOPWRIGHT_TEMPORAL_CLI,
    LOOPWRIGHT_KEYS: undefined,
  };
  const r = await runCli(['demo', '--yes', '--exit'], env, 240_000);
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
  const out = r.stdout;
  expect(out).toMatch(/Temporal dev server: 127\.0\.0\.1:7233, Web UI: http:\/\/localhost:8233/);
  expect(out).toContain('attempt 1: failed: the failing test, run as base wrote it, does not pass');
  expect(out).toContain('attempt 2: passed');
  // The demo's approval is a signed decision, checked by the worker against the allowed signers it set up.
  expect(out).toMatch(
    /Decisions are signed: the demo signs as \S+ with .*signing\/demo_ed25519, which .*allowed_signers trusts/,
  );
  expect(out).toMatch(/Approved by \S+: verified \(key SHA256:[A-Za-z0-9+/]{43}\)/);
  const id = must(/Started fix-test: (fix-test\/\S+)/.exec(out)?.[1], 'the demo prints the run id');
  // Encrypted by default: the demo made a key ring, the Web UI decodes through the codec server, the database holds ciphertext.
  expect(out).toContain(
    `Payloads, transcripts and reports are encrypted with a key ring the demo made: ${path.join(home, 'keys')}`,
  );
  expect(out).toMatch(/The Web UI decodes payloads through the codec server at http:\/\/127\.0\.0\.1:\d+/);
  expect(databaseHolds(path.join(home, 'dev.db'), 'sample-math')).toBe(false);
  expect(databaseHolds(path.join(home, 'dev.db'), id)).toBe(true);
  expect(out).toContain(
    `See the run in the Web UI: http://localhost:8233/namespaces/default/workflows/${encodeURIComponent(id)}`,
  );
  const repo = must(
    /The fix is commit [0-9a-f]{12} on main in (\S+) /.exec(out)?.[1],
    'the demo prints the fix commit',
  );
  const message = execFileSync('git', ['-C', repo, 'log', '-1', '--format=%B'], { encoding: 'utf8' });
  expect(message).toContain(`Loopwright-Effect: ${id}/commit/1`);
  expect(execFileSync('node', ['--test'], { cwd: repo, encoding: 'utf8' })).toMatch(/# fail 0/);
});
