import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { createToolRegistry, executeTool } from '../../activities/tools/registry';
import type { ToolContext } from '../../activities/tools/types';

/**
 * A hostile agent against the containment, through the real tools (run_command in the real
 * bubblewrap sandbox, the file and git tools and the checks on the worker's side), for holes
 * beyond those of containment.test.ts, containment-more.test.ts and limits.test.ts. Each test
 * here failed on the code before its fix.
 */
let dir: string;
let ws: string;
const registry = createToolRegistry();

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-redteam-')));
  ws = path.join(dir, 'ws');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function sandboxOf(env: Record<string, string> = {}): Sandbox {
  return createSandbox(
    sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_HOME: path.join(dir, 'home'), ...env }),
  );
}

function ctx(sandbox: Sandbox, root = ws): ToolContext {
  return { root, allowedCommands: ['sh'], commandTimeoutMs: 30_000, outputCapChars: 100_000, sandbox };
}

/** run_command of a shell script (the loop allows `sh`); its output with `[exit code N]`. */
async function sh(c: ToolContext, script: string): Promise<string> {
  const outcome = await executeTool(
    registry,
    'run_command',
    { command: `sh -c '${script.replace(/'/g, `'\\''`)}'` },
    c,
  );
  return outcome.content;
}

describe('/proc inside the sandbox', () => {
  test('no global sysctl is writable, even for a worker running as root (core_pattern would run a program as host root)', async () => {
    const out = await sh(
      ctx(sandboxOf()),
      // access(2) asks the kernel's own permission check without writing anything; vm.swappiness
      // is written back with the value it has, which changes nothing when it is allowed.
      'for f in kernel/core_pattern kernel/modprobe kernel/poweroff_cmd vm/drop_caches; do ' +
        '[ -w /proc/sys/$f ] && echo "[writable: $f]"; done; ' +
        'v=$(cat /proc/sys/vm/swappiness); echo "$v" > /proc/sys/vm/swappiness && echo "[wrote vm.swappiness]"; ' +
        'echo "[read $(cat /proc/sys/kernel/ostype)]"',
    );
    expect(out).not.toContain('[writable:');
    expect(out).not.toContain('[wrote vm.swappiness]');
    // Reading still works: programs look at /proc/sys.
    expect(out).toContain('[read Linux]');
  });

  test('a command cannot take back its out-of-memory preference (oom_score_adj 1000)', async () => {
    const out = await sh(
      ctx(sandboxOf()),
      'echo 0 > /proc/self/oom_score_adj; sh -c "echo 0 > /proc/\\$\\$/oom_score_adj"; ' +
        'echo "[adj $(cat /proc/self/oom_score_adj)]"; echo "[ps $(ps -o pid= | wc -l)]"',
    );
    expect(out).toContain('[adj 1000]');
    // The rest of /proc still reads as before (ps, /proc/self).
    expect(out).toMatch(/\[ps [1-9]\d*\]/);
  });
});
