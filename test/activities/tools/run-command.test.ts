import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import type { ToolContext, ToolOutcome } from '../../../activities/tools/types';
import { processesNamed, removeDir, tempDir, toolContext, waitNoneNamed } from './workspace';

let root: string;
const registry = createToolRegistry();

beforeEach(() => {
  root = tempDir('run');
});
afterEach(() => removeDir(root));

const run = (command: string, overrides: Partial<ToolContext> = {}): Promise<ToolOutcome> =>
  executeTool(
    registry,
    'run_command',
    { command },
    toolContext(root, { allowedCommands: ['node', 'npm test'], ...overrides }),
  );

describe('run_command', () => {
  test('an allowed command runs in the workspace root and ends with its exit code', async () => {
    const outcome = await run(`node -e "console.log(process.cwd())"`);
    expect(outcome).toEqual({ content: `${realpathSync(root)}\n[exit code 0]`, isError: false });
  });

  test('stdout and stderr are interleaved in one output', async () => {
    const outcome = await run(`node -e "console.log('to stdout'); console.error('to stderr')"`);
    expect(outcome.content).toContain('to stdout\n');
    expect(outcome.content).toContain('to stderr\n');
    expect(outcome.content).toMatch(/\[exit code 0\]$/);
  });

  test('quoted arguments reach the program intact, metacharacters included', async () => {
    const outcome = await run(
      `node -e "console.log(process.argv.slice(1).join('|'))" 'a b' "c \\"d\\"" e\\ f 'x; y > z'`,
    );
    expect(outcome.content).toBe('a b|c "d"|e f|x; y > z\n[exit code 0]');
  });

  test('a command outside the allow-list is refused and names what is allowed', async () => {
    const outcome = await run('npm publish');
    expect(outcome).toEqual({ content: 'command not allowed: npm publish (allowed: node, npm test)', isError: true });
  });

  test('an empty allow-list refuses everything', async () => {
    const outcome = await run('node -v', { allowedCommands: [] });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('command not allowed: node -v (no commands are allowed in this loop)');
  });

  test('shell metacharacters are refused before anything runs', async () => {
    const outcome = await run(`node -e "require('fs').writeFileSync('ran.txt','')" > out.txt`);
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('commands run without a shell');
    expect(existsSync(path.join(root, 'ran.txt'))).toBe(false);
    expect(existsSync(path.join(root, 'out.txt'))).toBe(false);
  });

  test('a non-zero exit is returned normally with its output and exit code', async () => {
    const outcome = await run(`node -e "console.error('expected 2 got 3'); process.exit(3)"`);
    expect(outcome).toEqual({ content: 'expected 2 got 3\n[exit code 3]', isError: false });
  });

  // Sandboxed commands have pids of their own namespace: what survives is found by its command line.
  const sleeper = (tag: string) => `sleep 30.${tag}${process.pid % 1000}`;

  test('a command that outlives its timeout returns quickly as an error and leaves no process behind', async () => {
    const started = Date.now();
    const name = sleeper('1');
    const outcome = await run(
      `node -e "require('child_process').spawn('sleep',['${name.split(' ')[1]}'],{stdio:'ignore'}); console.log('spawned'); setTimeout(()=>{},10000)"`,
      { commandTimeoutMs: 500 },
    );
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toBe('spawned\n[timed out after 0.5s]');
    expect(await waitNoneNamed(name)).toBe(true);
    expect(
      await waitNoneNamed(
        `node -e require('child_process').spawn('sleep',['${name.split(' ')[1]}'],{stdio:'ignore'}); console.log('spawned'); setTimeout(()=>{},10000)`,
      ),
    ).toBe(true);
  });

  test('a background process the command started, even in a session of its own, is killed when the command exits', async () => {
    const name = sleeper('2');
    const outcome = await run(
      `node -e "require('child_process').spawn('sleep',['${name.split(' ')[1]}'],{stdio:'ignore',detached:true}).unref(); console.log('left it running')"`,
    );
    expect(outcome.isError).toBe(false);
    expect(outcome.content).toContain('left it running');
    expect(await waitNoneNamed(name)).toBe(true);
  });

  test('cancelling the activity kills the command and rethrows the abort', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const name = sleeper('3');
    setTimeout(() => controller.abort(new Error('activity cancelled')), 500);
    await expect(
      run(
        `node -e "require('child_process').spawn('sleep',['${name.split(' ')[1]}'],{stdio:'ignore'}); require('fs').writeFileSync('started', ''); setTimeout(()=>{},10000)"`,
        { signal: controller.signal },
      ),
    ).rejects.toThrow('activity cancelled');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(existsSync(path.join(root, 'started'))).toBe(true);
    expect(await waitNoneNamed(name)).toBe(true);
    expect(processesNamed(name)).toEqual([]);
  });

  test('an activity already cancelled runs nothing and rethrows the abort', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled before'));
    await expect(
      run(`node -e "require('fs').writeFileSync('ran', '')"`, { signal: controller.signal }),
    ).rejects.toThrow('cancelled before');
    expect(existsSync(path.join(root, 'ran'))).toBe(false);
  });

  test('long output is capped, keeping its head and tail', async () => {
    const outcome = await run(`node -e "process.stdout.write('START' + 'x'.repeat(5000) + 'END')"`, {
      outputCapChars: 1000,
    });
    expect(outcome.isError).toBe(false);
    expect(outcome.content.startsWith('START')).toBe(true);
    expect(outcome.content).toContain('[… 4008 chars cut …]');
    expect(outcome.content.endsWith('END\n[exit code 0]')).toBe(true);
    expect(outcome.content.length).toBeLessThan(1100);
  });

  describe('with secrets in the worker environment', () => {
    const names = [
      'ANTHROPIC_API_KEY',
      'OPENAI_KEY',
      'GH_PAT',
      'DATABASE_URL',
      'AWS_ACCESS_KEY_ID',
      'SSH_AUTH_SOCK',
      'LOOPWRIGHT_VISIBLE',
    ];
    const saved = new Map(names.map((n) => [n, process.env[n]]));
    beforeEach(() => {
      for (const name of names) process.env[name] = `value-of-${name}`;
    });
    afterEach(() => {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });

    test('ANTHROPIC_API_KEY is not passed to the command', async () => {
      const outcome = await run(`node -e "console.log(process.env.ANTHROPIC_API_KEY ?? 'none')"`);
      expect(outcome.content).toBe('none\n[exit code 0]');
    });

    test("the environment is an allow-list: nothing of the worker's is inherited, whatever its name", async () => {
      const outcome = await run(`node -e "console.log(JSON.stringify(process.env))"`);
      const env = JSON.parse(outcome.content.split('\n')[0] ?? '') as Record<string, string>;
      for (const name of names) expect(env[name]).toBeUndefined();
      // bubblewrap adds PWD (the workspace) as it changes into it.
      expect(
        Object.keys(env)
          .filter((n) => n !== 'PWD')
          .sort(),
      ).toEqual(['CI', 'HOME', 'PATH', 'TMPDIR', ...(process.env.LANG ? ['LANG'] : [])].sort());
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.CI).toBe('true');
    });

    test('the variables a loop declares reach the command', async () => {
      const outcome = await run(`node -e "console.log(process.env.NODE_ENV)"`, { commandEnv: { NODE_ENV: 'test' } });
      expect(outcome.content).toBe('test\n[exit code 0]');
    });
  });

  test('a command missing from PATH is an error that says so', async () => {
    const outcome = await run('no-such-program-loopwright', { allowedCommands: ['no-such-program-loopwright'] });
    expect(outcome).toEqual({
      content:
        'cannot run no-such-program-loopwright: no-such-program-loopwright was not found on the PATH inside the sandbox',
      isError: true,
    });
  });
});
