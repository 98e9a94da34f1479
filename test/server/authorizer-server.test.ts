import { readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { localInstallPath } from '../../server/binary-locator';
import {
  authorizerServerSource,
  authorizerServerSourceHash,
  findAuthorizerServer,
  usesLoopwrightAuthorizer,
} from '../../server/cluster/temporal-server-binary';
import { removeDir, tempDir, writeScript } from './fake-bin';

/**
 * The server with the Loopwright authorizer (deploy/temporal-server/): picked by
 * TEMPORAL_AUTH_AUTHORIZER=loopwright, built with `go build` (a fake `go` here) into the local
 * install with the sources' hash linked in, and rebuilt when the install is of other sources.
 */
let root: string;
beforeEach(() => (root = tempDir()));
afterEach(() => removeDir(root));

/** A fake `go` whose `build -o OUT -ldflags "-X main.sourceHash=H" .` writes a server that prints H. */
function fakeGo(): { env: NodeJS.ProcessEnv; builds: () => string[] } {
  const bin = join(root, 'bin');
  const log = join(root, 'go-calls');
  writeFileSync(log, '');
  writeScript(
    bin,
    'go',
    [
      'case "$1" in',
      '  version) echo "go version go1.26.8 linux/amd64" ;;',
      `  build) echo "$PWD $*" >> ${log}`,
      '    h=${5#-X main.sourceHash=}',
      `    printf '#!/bin/sh\\necho "temporal version 1.29.7 (loopwright authorizer %s)"\\n' "$h" > "$3"; chmod +x "$3" ;;`,
      'esac',
    ].join('\n'),
  );
  return {
    env: { PATH: `${bin}:/usr/bin:/bin` },
    builds: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
  };
}

test('TEMPORAL_AUTH_AUTHORIZER=loopwright (any case) picks it; default, empty or unset do not', () => {
  expect(usesLoopwrightAuthorizer({ TEMPORAL_AUTH_AUTHORIZER: 'loopwright' })).toBe(true);
  expect(usesLoopwrightAuthorizer({ TEMPORAL_AUTH_AUTHORIZER: ' Loopwright ' })).toBe(true);
  expect(usesLoopwrightAuthorizer({ TEMPORAL_AUTH_AUTHORIZER: 'default' })).toBe(false);
  expect(usesLoopwrightAuthorizer({ TEMPORAL_AUTH_AUTHORIZER: '' })).toBe(false);
  expect(usesLoopwrightAuthorizer({})).toBe(false);
  expect(usesLoopwrightAuthorizer(undefined)).toBe(false);
});

test('built from deploy/temporal-server into the local install once, and again when the install is of other sources', async () => {
  const go = fakeGo();
  const home = join(root, 'home');
  const local = localInstallPath(home, 'loopwright-temporal-server');
  const hash = authorizerServerSourceHash();
  expect(hash).toMatch(/^[0-9a-f]{12}$/);

  expect(await findAuthorizerServer({ env: go.env, home })).toBe(local);
  expect(go.builds()).toEqual([
    expect.stringMatching(
      new RegExp(
        `^${authorizerServerSource()} build -o \\S+/loopwright-temporal-server -ldflags -X main.sourceHash=${hash} \\.$`,
      ),
    ),
  ]);
  // Found, not built, the second time.
  expect(await findAuthorizerServer({ env: go.env, home })).toBe(local);
  expect(go.builds()).toHaveLength(1);

  // A build of other sources is stale.
  writeScript(
    join(home, 'temporal', 'bin'),
    'loopwright-temporal-server',
    'echo "temporal version 1.29.7 (loopwright authorizer 000000000000)"',
  );
  expect(await findAuthorizerServer({ env: go.env, home })).toBe(local);
  expect(go.builds()).toHaveLength(2);
});
