import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../../common/errors';
import {
  createSandbox,
  sandboxConfigFromEnv,
  SandboxUnavailableError,
  type Sandbox,
  type SandboxConfig,
} from '../../../activities/sandbox/sandbox';

/**
 * The sandbox on its own, with the real bubblewrap: what a command inside can and cannot see,
 * reach, write and leave behind. The hostile-agent tests (test/security) try the same through
 * the real tools and checks of a run.
 */
const CANARY = 'canary-7f3a9c-do-not-leak';
let dir: string;
let ws: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-sandbox-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function config(over: Partial<SandboxConfig> = {}, env: Record<string, string> = {}): SandboxConfig {
  const base = sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_HOME: path.join(dir, 'lw-home'), ...env });
  return {
    ...base,
    env: {
      ...base.env,
      ANTHROPIC_API_KEY: CANARY,
      DATABASE_URL: `postgres://u:${CANARY}@db/x`,
      SSH_AUTH_SOCK: `/tmp/${CANARY}.sock`,
      GH_PAT: CANARY,
    },
    ...over,
  };
}

async function sh(sandbox: Sandbox, script: string, workspace = ws) {
  return sandbox.run(['sh', '-c', script], { workspace, timeoutMs: 20_000, capChars: 100_000 });
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });

describe('the bubblewrap sandbox', () => {
  test('works on this machine (a real probe) and says so', async () => {
    const status = await createSandbox(config()).status();
    expect(status).toMatchObject({ kind: 'bwrap' });
  });

  test('a command sees only the allow-listed environment, in its own env and in /proc/1/environ', async () => {
    const run = await sh(
      createSandbox(config()),
      'env; echo ---; tr "\\0" "\\n" < /proc/1/environ; echo ---; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f"; done',
    );
    expect(run.code).toBe(0);
    expect(run.sandbox).toBe('bwrap');
    expect(run.output).not.toContain(CANARY);
    const names = (run.output.split('---')[0] ?? '')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('=')[0] ?? '')
      .sort();
    // sh itself adds PWD, SHLVL and _; the worker's environment here has no LANG.
    expect(names.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n))).toEqual(['CI', 'HOME', 'PATH', 'TMPDIR']);
    expect(run.output).toContain('HOME=/tmp/home');
  });

  test('variables the loop declares are added; HOME and TMPDIR stay the private ones', async () => {
    const run = await createSandbox(config()).run(['sh', '-c', 'echo "$NODE_ENV $HOME $TMPDIR"'], {
      workspace: ws,
      env: { NODE_ENV: 'test', HOME: '/root' },
      timeoutMs: 10_000,
      capChars: 1000,
    });
    expect(run.output.trim()).toBe('test /tmp/home /tmp');
  });

  test('only the workspace, a private /tmp and HOME are writable; the system is read-only', async () => {
    const sandbox = createSandbox(config());
    expect((await sh(sandbox, 'echo ok > inside && cat inside')).output).toContain('ok');
    expect(readFileSync(path.join(ws, 'inside'), 'utf8')).toBe('ok\n');
    expect(
      (await sh(sandbox, 'echo x > /tmp/scratch && echo y > "$HOME/.cache" && cat /tmp/scratch "$HOME/.cache"')).output,
    ).toBe('x\ny\n');
    expect(existsSync('/tmp/scratch')).toBe(false);
    for (const target of ['/etc/loopwright-test', '/usr/loopwright-test', '/loopwright-test']) {
      const run = await sh(sandbox, `echo x > ${target}`);
      expect(run.code).not.toBe(0);
      expect(existsSync(target)).toBe(false);
    }
    // Beside the workspace is the sandbox's private /tmp: what is written there never reaches the host.
    await sh(sandbox, `echo x > ${path.join(dir, 'outside')}`);
    expect(existsSync(path.join(dir, 'outside'))).toBe(false);
  });

  test('LOOPWRIGHT_HOME, other folders, homes and system secrets are not readable, even inside mounted paths', async () => {
    const lwHome = path.join(ws, '.loopwright');
    mkdirSync(path.join(lwHome, 'transcripts'), { recursive: true });
    writeFileSync(path.join(lwHome, 'transcripts', 'blob'), CANARY);
    const other = path.join(dir, 'other-run');
    mkdirSync(other);
    writeFileSync(path.join(other, 'secret.txt'), CANARY);
    const ro = path.join(dir, 'toolchain');
    const fakeHome = path.join(ro, 'home');
    mkdirSync(path.join(fakeHome, '.ssh'), { recursive: true });
    writeFileSync(path.join(fakeHome, '.ssh', 'id_ed25519'), CANARY);
    writeFileSync(path.join(ro, 'tool.txt'), 'tool');
    const sandbox = createSandbox(config({ masked: [lwHome, fakeHome, '/root', '/home'], readOnly: [ro] }));
    const run = await sh(
      sandbox,
      [
        `cat ${lwHome}/transcripts/blob`,
        `ls ${lwHome}`,
        `cat ${other}/secret.txt`,
        `ls ${other}`,
        `cat ${fakeHome}/.ssh/id_ed25519`,
        'ls -a /root',
        'cat /etc/shadow',
        'ls /etc/ssh',
        `cat ${ro}/tool.txt`,
        `echo x > ${ro}/tool.txt`,
      ]
        .map((c) => `${c} 2>&1; echo "[$?]"`)
        .join('; '),
    );
    expect(run.output).not.toContain(CANARY);
    expect(run.output).toContain('tool');
    expect(readFileSync(path.join(ro, 'tool.txt'), 'utf8')).toBe('tool');
  });

  test('what the worker trusts (allowed signers, grants) and a signing key are masked, even inside the workspace or a read-only path', async () => {
    const ro = path.join(dir, 'etc-loopwright');
    mkdirSync(path.join(ro, 'grants'), { recursive: true });
    const allowed = path.join(ro, 'allowed_signers');
    writeFileSync(allowed, `ops ${CANARY}\n`);
    writeFileSync(path.join(ro, 'grants', 'fix-test-L3.json'), CANARY);
    const key = path.join(ws, 'signing_key');
    writeFileSync(key, CANARY);
    const env = {
      LOOPWRIGHT_ALLOWED_SIGNERS: allowed,
      LOOPWRIGHT_GRANTS: path.join(ro, 'grants'),
      LOOPWRIGHT_SIGNING_KEY: key,
    };
    const sandbox = createSandbox(config({ readOnly: [ro] }, env));
    const run = await sh(
      sandbox,
      [
        `cat ${allowed}`,
        `cat ${ro}/grants/*`,
        `ls ${ro}/grants`,
        `cat ${key}`,
        `echo "ops evil" >> ${allowed}`,
        `echo x > ${ro}/grants/evil.json`,
      ]
        .map((c) => `${c} 2>&1; echo "[$?]"`)
        .join('; '),
    );
    expect(run.output).not.toContain(CANARY);
    expect(readFileSync(allowed, 'utf8')).toBe(`ops ${CANARY}\n`);
    expect(readdirSync(path.join(ro, 'grants'))).toEqual(['fix-test-L3.json']);
  });

  test("the repository's .git is read-only: history can be read, nothing can be committed, moved or hooked", async () => {
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'a.txt'), 'a\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'base');
    const head = git(ws, 'rev-parse', 'HEAD').trim();
    const sandbox = createSandbox(config());
    expect((await sh(sandbox, 'git log --oneline')).output).toContain('base');
    for (const attack of [
      'git -c user.name=a -c user.email=a@a commit -q --allow-empty -m evil',
      'git update-ref refs/heads/main HEAD~0^{tree}',
      'git branch evil',
      'echo "#!/bin/sh" > .git/hooks/post-commit',
      'git config core.fsmonitor "touch /tmp/pwned"',
      'git log --output=.git/config',
      'rm -rf .git/objects',
    ]) {
      const run = await sh(sandbox, attack);
      expect(run.code).not.toBe(0);
    }
    expect(git(ws, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(ws, 'branch', '--list').trim()).toBe('* main');
    expect(existsSync(path.join(ws, '.git', 'hooks', 'post-commit'))).toBe(false);
    expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).not.toContain('fsmonitor');
  });

  test("in a linked worktree the repository's .git and the worktree's gitdir are read-only too", async () => {
    const repo = path.join(dir, 'repo');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'a.txt'), 'a\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'base');
    const tree = path.join(dir, 'worktree');
    git(repo, 'worktree', 'add', '-q', '-b', 'loopwright/run', tree);
    const sandbox = createSandbox(config());
    expect((await sh(sandbox, 'git log --oneline', tree)).output).toContain('base');
    expect(
      (
        await sh(
          sandbox,
          'echo b > b.txt && git -c user.name=a -c user.email=a@a commit -q -am x; echo "[$?]"; echo evil > .git; echo "[$?]"',
          tree,
        )
      ).output,
    ).not.toContain('[0]\n[0]');
    for (const attack of [
      'git -c user.name=a -c user.email=a@a commit -q --allow-empty -m evil',
      `echo x > ${repo}/.git/hooks/post-commit`,
      `git -C ${repo} update-ref refs/heads/main HEAD`,
    ]) {
      expect((await sh(sandbox, attack, tree)).code).not.toBe(0);
    }
    // The repository's working tree is not mounted at all (only its .git, read-only).
    expect((await sh(sandbox, `cat ${repo}/a.txt`, tree)).code).not.toBe(0);
    await sh(sandbox, `echo x > ${repo}/a.txt`, tree);
    expect(readFileSync(path.join(repo, 'a.txt'), 'utf8')).toBe('a\n');
    expect(git(repo, 'log', '--oneline', 'main').trim().split('\n')).toHaveLength(1);
    expect(existsSync(path.join(repo, '.git', 'hooks', 'post-commit'))).toBe(false);
    expect(readFileSync(path.join(tree, '.git'), 'utf8')).toMatch(/^gitdir: /);
  });

  describe('network', () => {
    let server: Server;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((s) => {
        connections++;
        s.end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    test('no connection leaves the sandbox: not to a local port, not anywhere', async () => {
      const port = (server.address() as { port: number }).port;
      const probe = `require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(3); })`;
      const run = await createSandbox(config()).run(['node', '-e', probe], {
        workspace: ws,
        timeoutMs: 20_000,
        capChars: 1000,
      });
      expect(run.output).not.toContain('CONNECTED');
      expect(run.code).toBe(3);
      expect(connections).toBe(0);
    });
  });

  test('nothing a command starts outlives it, not even a process in its own session', async () => {
    const marker = `sleep 31.${process.pid % 1000}`;
    const run = await sh(
      createSandbox(config()),
      `(setsid ${marker} >/dev/null 2>&1 &); nohup ${marker} >/dev/null 2>&1 & echo started`,
    );
    expect(run.output).toContain('started');
    await new Promise((r) => setTimeout(r, 200));
    const alive = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ').trim() === marker;
        } catch {
          return false;
        }
      });
    expect(alive).toEqual([]);
  });

  test('a command cannot make namespaces of its own (no nested user namespace, so no way back to more kernel)', async () => {
    const run = await sh(createSandbox(config()), 'unshare -U true; echo "[$?]"; unshare -n true; echo "[$?]"');
    expect(run.output).not.toContain('[0]');
  });

  test('a file given to the command is readable at a fixed path, read-only', async () => {
    const host = path.join(dir, 'candidate');
    writeFileSync(host, 'the answer');
    const run = await createSandbox(config()).run(
      ['sh', '-c', 'cat "$CANDIDATE"; echo; echo x > "$CANDIDATE"; echo "[$?] $CANDIDATE"'],
      {
        workspace: ws,
        file: { host, variable: 'CANDIDATE' },
        timeoutMs: 10_000,
        capChars: 1000,
      },
    );
    expect(run.output).toContain('the answer');
    expect(run.output).toMatch(/\[[1-9]\d*\] \/run\/loopwright\/input/);
    expect(readFileSync(host, 'utf8')).toBe('the answer');
  });
});

test('extra readable and writable paths appear at the same path inside, and nothing beside them', async () => {
  const extra = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-sandbox-extra-')));
  try {
    writeFileSync(path.join(extra, 'reporter.js'), 'reporter');
    mkdirSync(path.join(extra, 'results'));
    mkdirSync(path.join(extra, 'hidden'));
    writeFileSync(path.join(extra, 'hidden', 'secret'), CANARY);
    // One stream (exec 2>&1): the shell's own error messages stay in order with the echoes.
    const run = await createSandbox(config()).run(
      [
        'sh',
        '-c',
        `exec 2>&1; cat ${extra}/reporter.js; echo; echo out > ${extra}/results/r.json; echo "[$?]"; echo x > ${extra}/reporter.js; echo "[$?]"; cat ${extra}/hidden/secret; echo "[$?]"`,
      ],
      {
        workspace: ws,
        readable: [path.join(extra, 'reporter.js')],
        writable: [path.join(extra, 'results')],
        timeoutMs: 10_000,
        capChars: 1000,
      },
    );
    expect(run.output).toMatch(/^reporter\n\[0\]\n.*\[[1-9]\d*\]\n.*\[[1-9]\d*\]\n$/s);
    expect(run.output).not.toContain(CANARY);
    expect(readFileSync(path.join(extra, 'results', 'r.json'), 'utf8')).toBe('out\n');
    expect(readFileSync(path.join(extra, 'reporter.js'), 'utf8')).toBe('reporter');
  } finally {
    rmSync(extra, { recursive: true, force: true });
  }
});

describe('without a working sandbox', () => {
  test('LOOPWRIGHT_SANDBOX=off runs commands unsandboxed, says sandbox none, and still passes no secret', async () => {
    const sandbox = createSandbox(config({}, { LOOPWRIGHT_SANDBOX: 'off' }));
    expect(await sandbox.status()).toEqual({ kind: 'none' });
    const run = await sh(sandbox, 'env');
    expect(run.sandbox).toBe('none');
    expect(run.output).not.toContain(CANARY);
    expect(run.output).toMatch(/HOME=\/.*loopwright-home-/);
  });

  test('a missing bwrap is reported with how to install it and how to opt out', async () => {
    const sandbox = createSandbox(config({}, { LOOPWRIGHT_BWRAP: path.join(dir, 'no-such-bwrap') }));
    const status = await sandbox.status();
    expect(status).toMatchObject({ kind: 'unavailable' });
    const err = await sandbox.run(['true'], { workspace: ws, timeoutMs: 1000, capChars: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxUnavailableError);
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain('no-such-bwrap');
    expect(message).toContain('apt-get install bubblewrap');
    expect(message).toContain('LOOPWRIGHT_SANDBOX=off');
  });

  test('a bwrap that cannot make namespaces fails the real probe, with its own words', async () => {
    const fake = path.join(dir, 'bwrap');
    writeFileSync(
      fake,
      '#!/bin/sh\nif [ "$1" = --version ]; then echo "bubblewrap 0.8.0"; exit 0; fi\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n',
    );
    chmodSync(fake, 0o755);
    const status = await createSandbox(config({}, { LOOPWRIGHT_BWRAP: fake })).status();
    expect(status).toEqual({
      kind: 'unavailable',
      reason: 'the bwrap probe failed: bwrap: No permissions to creating new namespace',
    });
  });

  test('an unknown LOOPWRIGHT_SANDBOX value is a config error that names the choices', () => {
    expect(() => sandboxConfigFromEnv({ LOOPWRIGHT_SANDBOX: 'maybe' })).toThrow(ConfigError);
    expect(() => sandboxConfigFromEnv({ LOOPWRIGHT_SANDBOX: 'maybe' })).toThrow(/use bwrap \(the default\) or off/);
  });
});
