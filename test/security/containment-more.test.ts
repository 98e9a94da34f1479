import { execFileSync, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { workspaceGitDirs } from '../../activities/sandbox/git-dirs';
import { trustPathsFromEnv } from '../../activities/trust';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { secretPathsOf } from '../../activities/sandbox/secret-paths';
import { callTool, runShell, sandboxIn, toolContext } from '../helpers/sandbox-tools';

/**
 * A hostile agent against the containment, through the real tools (run_command in the real
 * bubblewrap sandbox, the git and file tools on the worker's side), beyond the probes of
 * containment.test.ts: git metadata written by the agent that would steer the worker's own
 * git or the next sandbox's mounts, and secret files the worker's environment names in places
 * the sandbox mounts.
 */
const SECRET = 'secret-4b1d7e-of-another-repository';
const KEY = 'key-9c2f55-of-the-worker';
let dir: string;
let ws: string;
let other: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    encoding: 'utf8',
  });

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-contain-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
  // Another repository on the machine (another project, another run's checkout): never the agent's to read.
  other = path.join(dir, 'other');
  mkdirSync(other);
  git(other, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(other, 'secret.txt'), `${SECRET}\n`);
  git(other, 'add', '.');
  git(other, 'commit', '-q', '-m', 'secret');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sandboxOf = (env: Record<string, string> = {}) => sandboxIn(dir, env);
const ctx = (sandbox: Sandbox, root = ws) => toolContext(sandbox, root, ['sh', 'git', 'cat'], 20_000);
const tool = callTool;
const sh = runShell;

describe('git metadata the agent writes steers neither the worker nor the sandbox', () => {
  test('in a workspace without .git, no .git file, .git folder or bare-repository layout it writes is followed', async () => {
    const c = ctx(sandboxOf());
    // A .git file naming another repository, and a repository of its own whose worktree or
    // common dir is that other repository.
    const tries = [
      `printf "gitdir: ${other}/.git\\n" > .git`,
      'git init -q .',
      `mkdir -p .git && printf "${other}/.git\\n" > .git/commondir`,
    ];
    for (const attempt of tries) expect(await sh(c, `${attempt}; echo "[rc $?]"`)).not.toContain('[rc 0]');
    // The layout of a bare repository is ordinary files, which it may write (here with the file
    // tools): its config, common dir and alternates all lead to the other repository.
    const bare: Record<string, string> = {
      HEAD: 'ref: refs/heads/main\n',
      config: `[core]\n\tbare = false\n\tworktree = ${other}\n`,
      'refs/heads/main': git(other, 'rev-parse', 'HEAD'),
      commondir: `${other}/.git\n`,
      'objects/info/alternates': `${other}/.git/objects\n`,
    };
    for (const [file, content] of Object.entries(bare))
      expect(await tool(c, 'write_file', { path: file, content })).toMatchObject({ isError: false });
    for (const name of ['git_diff', 'git_status']) {
      const outcome = await tool(c, name);
      expect(outcome.content).not.toContain(SECRET);
      expect(outcome.content).not.toContain('secret.txt');
      expect(outcome).toMatchObject({ isError: true, content: expect.stringContaining('not a git repository') });
    }
    // The file tools refuse .git too, and the next command still cannot see the other repository.
    expect((await tool(c, 'write_file', { path: '.git/config', content: '[core]\n' })).isError).toBe(true);
    const next = await sh(c, `cat ${other}/secret.txt; git --git-dir=${other}/.git show HEAD:secret.txt; ls ${dir}`);
    expect(next).not.toContain(SECRET);
    expect(next).not.toMatch(/^other$/m);
    // Nothing is left on the host: the empty folder that stood in for .git is gone with the command.
    expect(existsSync(path.join(ws, '.git'))).toBe(false);
    expect(workspaceGitDirs(ws)).toEqual([]);
  });

  test('two commands at once in a workspace without .git: the one that ends first does not unmask the other', async () => {
    const sandbox = sandboxOf();
    const run = (script: string) =>
      sandbox.run(['sh', '-c', script], { workspace: ws, timeoutMs: 20_000, capChars: 10_000 });
    const slow = run('sleep 1; mkdir .git/hooks; echo x > .git/config; echo "[done]"');
    await new Promise((r) => setTimeout(r, 300));
    expect((await run('true')).code).toBe(0);
    expect((await slow).output).toContain('[done]');
    expect(existsSync(path.join(ws, '.git'))).toBe(false);
  });

  test('the same, when the command that ends first belongs to another process (another worker on the same folder)', async () => {
    // The other process runs the built sandbox (dist/), as another worker would.
    const other = spawn(
      process.execPath,
      [
        '-e',
        `const { createSandbox, sandboxConfigFromEnv } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/activities/sandbox/sandbox.js'))});
         createSandbox(sandboxConfigFromEnv({ PATH: process.env.PATH }))
           .run(['sh', '-c', 'sleep 1'], { workspace: process.argv[1], timeoutMs: 20000, capChars: 1000 })
           .then((r) => console.log('other ended', r.code));`,
        ws,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let said = '';
    other.stdout.on('data', (d: Buffer) => (said += d.toString()));
    const ended = new Promise((r) => other.once('exit', r));
    // This process's command starts while the other's holds the stand-in, and outlives it.
    for (let i = 0; i < 100 && !existsSync(path.join(ws, '.git')); i++) await new Promise((r) => setTimeout(r, 20));
    const mine = sandboxOf().run(
      [
        'sh',
        '-c',
        'sleep 2; [ -d .git ] && echo "[masked]"; git init -q . 2>/dev/null && echo "[made a repository]"; mkdir .git/hooks 2>/dev/null && echo "[wrote into .git]"; echo "[done]"',
      ],
      { workspace: ws, timeoutMs: 20_000, capChars: 10_000 },
    );
    await ended;
    expect(said).toContain('other ended 0');
    const out = (await mine).output;
    expect(out).toContain('[done]');
    expect(out).toContain('[masked]');
    expect(out).not.toContain('[made a repository]');
    expect(out).not.toContain('[wrote into .git]');
    expect(existsSync(path.join(ws, '.git'))).toBe(false);
  }, 30_000);

  test('a .git file already in the workspace that names another repository is not mounted; a real worktree still is', async () => {
    writeFileSync(path.join(ws, '.git'), `gitdir: ${other}/.git\n`);
    expect(workspaceGitDirs(ws)).toEqual([]);
    const c = ctx(sandboxOf());
    const run = await sh(c, `cat .git; git --git-dir=${other}/.git show HEAD:secret.txt; ls ${other}/.git`);
    expect(run).not.toContain(SECRET);
    expect(run).toMatch(/No such file or directory|not a git repository/);

    // The worktree an L2 run gets: its gitdir points back at it, so it and the common dir are mounted read-only.
    const wt = path.join(dir, 'worktree');
    git(other, 'worktree', 'add', '-q', '-b', 'loopwright/run', wt);
    expect(workspaceGitDirs(wt)).toEqual([path.join(other, '.git', 'worktrees', 'worktree'), path.join(other, '.git')]);
    const inWorktree = ctx(sandboxOf(), wt);
    expect(await sh(inWorktree, 'git log --oneline')).toContain('secret');
    expect(
      await sh(inWorktree, 'git -c user.name=a -c user.email=a@a commit -q --allow-empty -m evil; echo "[rc $?]"'),
    ).not.toContain('[rc 0]');
    expect(git(other, 'log', '--oneline', 'loopwright/run')).not.toContain('evil');
  });

  test('a workspace inside a repository: it cannot make a .git of its own, and the repository above still serves the git tools', async () => {
    const pkg = path.join(other, 'pkg');
    mkdirSync(pkg);
    writeFileSync(path.join(pkg, 'index.js'), 'module.exports = 1;\n');
    const c = ctx(sandboxOf(), pkg);
    expect(await sh(c, 'git init -q . ; echo "[rc $?]"')).not.toContain('[rc 0]');
    expect(await sh(c, `printf "gitdir: /nowhere\\n" > .git; echo "[rc $?]"`)).not.toContain('[rc 0]');
    // The worker's git still finds the repository above.
    expect(git(pkg, 'rev-parse', '--show-toplevel').trim()).toBe(other);
    const status = await tool(c, 'git_status');
    expect(status).toMatchObject({ isError: false, content: expect.stringMatching(/\?\? (pkg\/|index\.js)/) });
  });
});

describe('what the worker inherited', () => {
  test("a descriptor the worker was started with (a supervisor's pipe) reaches no sandboxed command", async () => {
    // A worker process started with an extra pipe open at fd 4 (its parent keeps the read end),
    // as a supervisor or a CI runner may leave one; the worker runs the built sandbox (dist/).
    const worker = spawn(
      process.execPath,
      [
        '-e',
        `const { createSandbox, sandboxConfigFromEnv } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/activities/sandbox/sandbox.js'))});
         createSandbox(sandboxConfigFromEnv({ PATH: process.env.PATH }))
           .run(['sh', '-c', 'ls /proc/self/fd | tr "\\n" " "; echo; echo leaked >&4 && echo "[wrote to 4]"; echo "[done]"'], { workspace: process.argv[1], timeoutMs: 20000, capChars: 10000 })
           .then((r) => console.log(r.output));`,
        ws,
      ],
      { stdio: ['ignore', 'pipe', 'inherit', 'ignore', 'pipe'] },
    );
    let said = '';
    let leaked = '';
    worker.stdout!.on('data', (d: Buffer) => (said += d.toString()));
    (worker.stdio[4] as NodeJS.ReadableStream).on('data', (d: Buffer) => (leaked += d.toString()));
    await new Promise((r) => worker.once('close', r));
    expect(said).toContain('[done]');
    expect(said).not.toContain('[wrote to 4]');
    expect(leaked).toBe('');
    // Inside: stdio and the one ls itself opened, nothing else.
    expect(said.split('\n')[0]!.trim().split(' ').map(Number).sort()).toEqual([0, 1, 2, 3]);
  }, 30_000);
});

describe("the worker's own folders inside a workspace, before they exist", () => {
  test('a command cannot make LOOPWRIGHT_HOME and plant the allowed signers or a grant the worker would then trust', async () => {
    // LOOPWRIGHT_HOME inside the workspace (a loop over the project that holds it), not made yet.
    const env = { PATH: process.env.PATH, LOOPWRIGHT_HOME: path.join(ws, '.lw-home') };
    const c = ctx(createSandbox(sandboxConfigFromEnv(env)));
    const out = await sh(
      c,
      'mkdir -p .lw-home/grants; echo "agent ssh-ed25519 AAAA" > .lw-home/allowed_signers && echo "[planted signers]"; ' +
        'echo "{}" > .lw-home/grants/fix-test.json && echo "[planted grant]"; echo "[done]"',
    );
    expect(out).toContain('[done]');
    expect(out).not.toContain('[planted signers]');
    expect(out).not.toContain('[planted grant]');
    expect(existsSync(path.join(ws, '.lw-home', 'allowed_signers'))).toBe(false);
    expect(trustPathsFromEnv(env).allowedSigners).toBeNull();
  });
});

describe('secret files the worker environment names are masked wherever the sandbox mounts them', () => {
  test('the Temporal TLS key and its folder, the key ring, cloud credentials and a kubeconfig list cannot be read', async () => {
    // A read-only path the sandbox mounts (as /etc is): what a compose file or an operator puts there.
    const ro = path.join(dir, 'etc');
    const tls = path.join(ro, 'temporal', 'tls');
    mkdirSync(tls, { recursive: true });
    for (const f of ['worker.key', 'worker.pem', 'frontend.key', 'frontend-ca.pem'])
      writeFileSync(path.join(tls, f), KEY);
    mkdirSync(path.join(ro, 'lw'));
    writeFileSync(path.join(ro, 'lw', 'keys'), `k1=${KEY}\n`);
    writeFileSync(path.join(ro, 'gcp.json'), KEY);
    writeFileSync(path.join(ro, 'kube-a'), KEY);
    writeFileSync(path.join(ro, 'kube-b'), KEY);
    writeFileSync(path.join(ro, 'public.txt'), 'public');
    const sandbox = sandboxOf({
      LOOPWRIGHT_SANDBOX_READ: ro,
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(tls, 'worker.key'),
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(tls, 'worker.pem'),
      LOOPWRIGHT_KEYS: path.join(ro, 'lw', 'keys'),
      GOOGLE_APPLICATION_CREDENTIALS: path.join(ro, 'gcp.json'),
      KUBECONFIG: `${path.join(ro, 'kube-a')}:${path.join(ro, 'kube-b')}`,
    });
    const run = await sh(
      ctx(sandbox),
      `for f in ${tls}/* ${ro}/lw/keys ${ro}/gcp.json ${ro}/kube-a ${ro}/kube-b; do cat "$f"; done; ls -R ${ro}; cat ${ro}/public.txt`,
    );
    expect(run).not.toContain(KEY);
    // The rest of the read-only path is still there.
    expect(run).toContain('public');
    expect(readFileSync(path.join(tls, 'worker.key'), 'utf8')).toBe(KEY);
  });

  test('secretPathsOf names paths by the variable, masks a key folder only when it is its own, and leaves CA bundles', () => {
    expect(
      secretPathsOf({
        TEMPORAL_TLS_CLIENT_KEY_PATH: '/etc/temporal/tls/worker.key',
        LOOPWRIGHT_KEYS: '/etc/loopwright/keys',
        SIGNING_KEY: '/etc/worker.key',
        KUBECONFIG: '/a/kube:/b/kube',
        AWS_CONFIG_FILE: '/srv/aws/config',
        SSL_CERT_FILE: '/etc/ssl/certs/ca-certificates.crt',
        ANTHROPIC_API_KEY: 'sk-not-a-path',
        TEMPORAL_TLS: 'true',
        PATH: '/usr/bin:/bin',
        SHELL: '/bin/bash',
      }).sort(),
    ).toEqual(
      [
        '/etc/temporal/tls/worker.key',
        '/etc/temporal/tls',
        '/etc/loopwright/keys',
        '/etc/worker.key',
        '/a/kube',
        '/b/kube',
        '/srv/aws/config',
      ].sort(),
    );
  });
});

describe('the sandbox holds against the rest of the list, through run_command and the file tools', () => {
  test('no /proc path, abstract or on-disk socket, UDP port or /dev/shm reaches the worker', async () => {
    const canary = `canary-${process.pid}-${Date.now()}`;
    const abstract = `\0lw-abstract-${canary}`;
    const onDisk = path.join(tmpdir(), `lw-sock-${canary}`);
    const shm = `/dev/shm/lw-${canary}`;
    const accepted: string[] = [];
    const servers = [abstract, onDisk].map((where) =>
      createServer((s) => {
        accepted.push(where);
        s.destroy();
      }).listen(where),
    );
    const udp = createSocket('udp4');
    const datagrams: string[] = [];
    udp.on('message', (m) => datagrams.push(m.toString()));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    writeFileSync(shm, canary);
    try {
      const c = ctx(sandboxOf({ ANTHROPIC_API_KEY: canary }), ws);
      const script = [
        `const fs = require("fs"), net = require("net"), dgram = require("dgram");`,
        `const out = [];`,
        `for (const p of ["/proc/self/../1/environ", "/proc/thread-self/environ", "/proc/1/cmdline", "/proc/1/root/proc/1/environ"]) { try { out.push(fs.readFileSync(p, "utf8")); } catch (e) { out.push(p + " " + e.code); } }`,
        `for (const pid of fs.readdirSync("/proc").filter((p) => /^\\d+$/.test(p))) { for (const l of ["cwd", "root"]) { try { out.push(pid + " " + l + " " + fs.readlinkSync("/proc/" + pid + "/" + l)); } catch {} } }`,
        `try { out.push(fs.readFileSync(${JSON.stringify(shm)}, "utf8")); } catch (e) { out.push("shm " + e.code); }`,
        `fs.writeFileSync("/dev/shm/inside-${canary}", "x");`,
        `const s = dgram.createSocket("udp4"); s.send("${canary}", ${(udp.address() as { port: number }).port}, "127.0.0.1", () => s.close());`,
        `let left = 2; const done = () => { if (--left === 0) console.log(out.join("\\n")); };`,
        `for (const where of [${JSON.stringify(abstract)}, ${JSON.stringify(onDisk)}]) { const k = net.connect(where); k.on("connect", () => { out.push("CONNECTED " + where); k.destroy(); done(); }); k.on("error", (e) => { out.push("socket " + e.code); done(); }); }`,
      ].join('\n');
      writeFileSync(path.join(ws, 'probe.js'), script);
      const run = await tool({ ...c, allowedCommands: ['node'] }, 'run_command', { command: 'node probe.js' });
      await new Promise((r) => setTimeout(r, 300));
      expect(run.content).toContain('[exit code 0]');
      expect(run.content).not.toContain(canary);
      expect(run.content).not.toContain('CONNECTED');
      // Every process inside sees only the sandbox's own root and the workspace.
      for (const line of run.content.split('\n').filter((l) => / (cwd|root) /.test(l)))
        expect(line).toMatch(new RegExp(` (cwd ${ws}|root /)$`));
      expect(accepted).toEqual([]);
      expect(datagrams).toEqual([]);
      expect(existsSync(`/dev/shm/inside-${canary}`)).toBe(false);
    } finally {
      for (const s of servers) s.close();
      udp.close();
      rmSync(shm, { force: true });
      rmSync(onDisk, { force: true });
    }
  });

  test('links a command makes lead the file tools nowhere outside the workspace or into .git', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    const outsideFile = path.join(dir, 'outside.txt');
    writeFileSync(outsideFile, 'outside\n');
    const c = ctx(sandboxOf());
    // Made inside the sandbox, where the outside does not exist: the links dangle there, not on the host.
    await sh(
      c,
      [
        `ln -s ${dir} up`,
        `ln -s ${outsideFile} file-link`,
        'ln -s .git g',
        'mkdir -p d && ln -s ../.git/hooks d/hooks',
        `ln -s /proc/self/root${dir} proc-root`,
        `ln ${outsideFile} hard 2>&1 || true`,
      ].join('; '),
    );
    for (const [p, content] of [
      ['up/outside.txt', 'pwned'],
      ['up/new.txt', 'pwned'],
      ['file-link', 'pwned'],
      ['g/config', '[core]\n\tfsmonitor = touch /tmp/pwned\n'],
      ['g/hooks/post-commit', '#!/bin/sh\n'],
      ['d/hooks/pre-commit', '#!/bin/sh\n'],
      ['proc-root/outside.txt', 'pwned'],
    ]) {
      const outcome = await tool(c, 'write_file', { path: p, content });
      expect(outcome).toMatchObject({ isError: true });
      expect((await tool(c, 'edit_file', { path: p, old_text: 'outside', new_text: 'pwned' })).isError).toBe(true);
    }
    expect((await tool(c, 'read_file', { path: 'up/outside.txt' })).isError).toBe(true);
    expect(readFileSync(outsideFile, 'utf8')).toBe('outside\n');
    expect(existsSync(path.join(dir, 'new.txt'))).toBe(false);
    expect(existsSync(path.join(ws, 'hard'))).toBe(false);
    expect(existsSync(path.join(ws, '.git', 'hooks', 'post-commit'))).toBe(false);
    expect(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).not.toContain('fsmonitor');
  });
});

describe('nothing the agent writes runs as the worker outside the sandbox', () => {
  test('a command cannot leave a setuid or setgid program in the workspace, by chmod, open or mknod', async () => {
    const c = ctx(sandboxOf());
    const run = await sh(
      c,
      [
        'cp /bin/sh suid && chmod 4755 suid',
        'chmod g+s suid',
        'python3 -c "import os; os.open(\\"created\\", os.O_CREAT | os.O_WRONLY, 0o4755)"',
        'python3 -c "import os; os.mknod(\\"node\\", 0o106755)"',
        `node -e 'require("fs").chmodSync("suid", 0o6755)'`,
        'chmod 700 suid && echo plain chmod works',
      ]
        .map((cmd) => `${cmd} 2>/dev/null; echo "[rc $?]"`)
        .join('; '),
    );
    expect(run).toContain('plain chmod works');
    for (const file of ['suid', 'created', 'node']) {
      const mode = existsSync(path.join(ws, file)) ? statSync(path.join(ws, file)).mode : 0;
      expect({ file, setid: (mode & 0o6000).toString(8) }).toEqual({ file, setid: '0' });
    }
  });
  test('a git the agent writes is not the one the worker runs, even when the worker PATH has relative or empty entries', async () => {
    git(ws, 'init', '-q', '-b', 'main');
    const marker = path.join(dir, 'fake-git-ran');
    const fake = `#!/bin/sh\necho ran > ${marker}\nexit 0\n`;
    const c = ctx(sandboxOf());
    for (const p of ['node_modules/.bin/git', 'git'])
      expect(await tool(c, 'write_file', { path: p, content: fake })).toMatchObject({ isError: false });
    await sh(c, 'chmod +x git node_modules/.bin/git');
    const saved = process.env.PATH;
    // A relative entry first (a developer's shell), and an empty one (a trailing colon), which means ".".
    process.env.PATH = `node_modules/.bin::${saved ?? ''}:`;
    try {
      for (const name of ['git_status', 'git_diff']) expect(await tool(c, name)).toMatchObject({ isError: false });
    } finally {
      process.env.PATH = saved;
    }
    expect(existsSync(marker)).toBe(false);
  });
  test("everything in the sandbox is the out-of-memory killer's first choice, and cannot make itself less so", async () => {
    const run = await sh(
      ctx(sandboxOf()),
      'cat /proc/self/oom_score_adj; echo -1000 > /proc/self/oom_score_adj; cat /proc/self/oom_score_adj',
    );
    expect(run).not.toMatch(/^-1000$/m);
    expect(run.match(/^1000$/gm)).toHaveLength(2);
  });
  test('the file tools reach no more than commands do: LOOPWRIGHT_HOME inside the workspace is neither readable nor writable', async () => {
    const home = path.join(ws, '.loopwright');
    const cache = path.join(home, 'cache', 'test-results');
    mkdirSync(cache, { recursive: true });
    writeFileSync(path.join(home, 'keys'), `k1=${KEY}\n`);
    writeFileSync(path.join(cache, 'base.json'), `{"results":[],"note":"${KEY}"}`);
    writeFileSync(path.join(ws, 'app.js'), 'module.exports = 1;\n');
    const saved = process.env.LOOPWRIGHT_HOME;
    process.env.LOOPWRIGHT_HOME = home;
    try {
      const c = ctx(sandboxOf({ LOOPWRIGHT_HOME: home }));
      await sh(c, 'ln -s .loopwright/keys k; ln -s .loopwright/cache c');
      const outcomes = [
        await tool(c, 'read_file', { path: '.loopwright/keys' }),
        await tool(c, 'read_file', { path: 'k' }),
        await tool(c, 'write_file', { path: '.loopwright/cache/test-results/base.json', content: '{"results":[]}' }),
        await tool(c, 'write_file', { path: 'c/test-results/forged.json', content: '{"results":[]}' }),
        await tool(c, 'edit_file', { path: '.loopwright/keys', old_text: 'k1', new_text: 'k2' }),
        await tool(c, 'list_files', { path: '.loopwright' }),
        await tool(c, 'search', { pattern: 'k1=|results', path: '.loopwright' }),
      ];
      for (const o of outcomes) expect(o).toMatchObject({ isError: true, content: expect.not.stringContaining(KEY) });
      // A search of the whole workspace passes over it; the listing shows it is there, nothing more.
      const all = await tool(c, 'search', { pattern: 'k1=|results|module' });
      expect(all).toMatchObject({ isError: false, content: expect.stringContaining('app.js:1') });
      expect(all.content).not.toContain(KEY);
      expect((await tool(c, 'list_files', { path: '.' })).content).toContain(
        ".loopwright (the worker's own: not listed)",
      );
      expect(await sh(c, 'cat .loopwright/keys k; ls .loopwright')).not.toContain(KEY);
      expect(readFileSync(path.join(cache, 'base.json'), 'utf8')).toContain(KEY);
      expect(existsSync(path.join(cache, 'forged.json'))).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.LOOPWRIGHT_HOME;
      else process.env.LOOPWRIGHT_HOME = saved;
    }
  });
  test('the kernel keyrings, bpf and userfaultfd are not there for sandboxed code (ENOSYS)', async () => {
    const numbers: Partial<Record<NodeJS.Architecture, number[]>> = {
      x64: [250, 248, 321, 323],
      arm64: [219, 217, 280, 282],
    };
    const nrs = numbers[process.arch] ?? [];
    expect(nrs.length).toBeGreaterThan(0);
    const script = `import ctypes; libc = ctypes.CDLL(None, use_errno=True); print([(libc.syscall(n, 0, 0, 0, 0), ctypes.get_errno()) for n in ${JSON.stringify(nrs)}])`;
    const run = await sh(ctx(sandboxOf()), `python3 -c "${script}"`);
    expect(run).toContain(`[${nrs.map(() => '(-1, 38)').join(', ')}]`);
  });
  test("a token in the repository's config (a remote URL, actions/checkout's auth header) reaches neither commands nor read_file", async () => {
    const token = `ghs_${KEY}`;
    git(ws, 'init', '-q', '-b', 'main');
    git(ws, 'remote', 'add', 'origin', `https://x-access-token:${token}@github.com/acme/app.git`);
    git(ws, 'config', 'http.https://github.com/.extraheader', `AUTHORIZATION: basic ${token}`);
    writeFileSync(path.join(ws, 'a.txt'), 'a\n');
    git(ws, 'add', '.');
    git(ws, 'commit', '-q', '-m', 'base');
    const wt = path.join(dir, 'worktree');
    git(ws, 'worktree', 'add', '-q', '-b', 'loopwright/run', wt);
    // A submodule's own config, kept in the common dir, has a remote of its own.
    mkdirSync(path.join(ws, '.git', 'modules', 'lib'), { recursive: true });
    writeFileSync(
      path.join(ws, '.git', 'modules', 'lib', 'config'),
      `[remote "origin"]\n\turl = https://${token}@github.com/acme/lib\n`,
    );
    for (const root of [ws, wt]) {
      const c = ctx(sandboxOf(), root);
      const run = await sh(
        c,
        `cat ${ws}/.git/config ${ws}/.git/modules/lib/config; git config --list; git remote -v; git log --oneline`,
      );
      expect(run).not.toContain(KEY);
      expect(run).toContain('base');
      expect(run).toContain('[core]');
    }
    const read = await tool(ctx(sandboxOf()), 'read_file', { path: '.git/config' });
    expect(read).toMatchObject({ isError: false, content: expect.stringContaining('[core]') });
    expect(read.content).not.toContain(KEY);
    expect((await tool(ctx(sandboxOf()), 'read_file', { path: '.git/modules/lib/config' })).content).not.toContain(KEY);
    // The worker's own git still sees the whole config.
    expect(git(ws, 'remote', 'get-url', 'origin')).toContain(token);
  });
});
