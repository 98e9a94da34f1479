import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVIDENCE_CHARS, runCommandCheck } from '../../../activities/checks/command';
import { dotGitRoot } from '../../../activities/sandbox/dot-git-holders';
import { findCgroupHome } from '../../../activities/sandbox/limits';
import { createSandbox, sandboxConfigFromEnv } from '../../../activities/sandbox/sandbox';
import { ZERO_USAGE } from '../../../common/usage';
import { waitNoneNamed } from '../tools/workspace';

const WORKFLOW_ID = `command-check-test/${process.pid}`;
let workspace: string;

beforeEach(() => {
  workspace = mkdtempSync(path.join(tmpdir(), 'loopwright-command-check-'));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

const check = (command: string, timeout = '10s', candidate = 'the candidate') =>
  runCommandCheck({
    workflowId: WORKFLOW_ID,
    attempt: 1,
    check: { kind: 'command', name: 'test', command, timeout },
    workspace,
    candidate,
  });

describe('runCommandCheck', () => {
  test('a command that exits 0 passes with its output as evidence', async () => {
    const verdict = await check('echo all good');
    expect(verdict).toMatchObject({
      check: 'test',
      kind: 'command',
      passed: true,
      failedItems: [],
      requiredCorrection: '',
    });
    expect(verdict.reason).toContain('exited 0');
    expect(verdict.evidence).toBe('all good\n');
    expect(verdict.usage).toEqual(ZERO_USAGE);
  });

  test('a command that exits 3 fails, says so, and keeps the tail of stdout and stderr as evidence', async () => {
    const verdict = await check('echo first; echo "expected 2 got 3" >&2; exit 3');
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('exited 3');
    expect(verdict.failedItems).toEqual(['test']);
    expect(verdict.evidence).toContain('first');
    expect(verdict.evidence).toContain('expected 2 got 3');
    expect(verdict.requiredCorrection).toContain('expected 2 got 3');
  });

  test('the candidate is readable through $LOOPWRIGHT_CANDIDATE_FILE', async () => {
    const candidate = 'line one\nline "two" $HOME\n';
    const verdict = await check('cat "$LOOPWRIGHT_CANDIDATE_FILE"', '10s', candidate);
    expect(verdict.passed).toBe(true);
    expect(verdict.evidence).toBe(candidate);
  });

  test('the candidate file is outside the workspace and read-only', async () => {
    const verdict = await check(
      'printf %s "$LOOPWRIGHT_CANDIDATE_FILE"; echo changed > "$LOOPWRIGHT_CANDIDATE_FILE" && echo WROTE',
    );
    expect(verdict.evidence).not.toContain(workspace);
    expect(verdict.evidence).not.toContain('WROTE');
    expect(verdict.evidence).toMatch(/^\/run\/loopwright\/input/);
  });

  test('the candidate is in the clear only while its check runs: 0600 in a private scratch folder, gone afterwards', async () => {
    const scratch = path.join(tmpdir(), 'loopwright', 'scratch', WORKFLOW_ID.replace(/[^A-Za-z0-9._-]+/g, '_'));
    const verdict = await check('stat -c %a "$LOOPWRIGHT_CANDIDATE_FILE"');
    expect(verdict.evidence?.trim()).toBe('600');
    expect(statSync(path.join(tmpdir(), 'loopwright')).mode & 0o777).toBe(0o700);
    expect(existsSync(scratch)).toBe(false);
  });

  test('a command in a workspace without .git leaves no registration folder of its .git stand-in behind', async () => {
    const folders = () => readdirSync(dotGitRoot()).length;
    const before = folders();
    await check('true');
    expect(folders()).toBe(before);
    expect(existsSync(path.join(workspace, '.git'))).toBe(false);
  });

  test('the verdict says which sandbox ran the command', async () => {
    expect((await check('true')).sandbox).toBe('bwrap');
  });

  test("without the candidate (a loop whose agent runs commands) the environment is exactly the agent's", async () => {
    const verdict = await runCommandCheck({
      workflowId: WORKFLOW_ID,
      attempt: 3,
      check: { kind: 'command', name: 'test', command: 'env | cut -d= -f1 | sort | tr "\\n" " "', timeout: '10s' },
      workspace,
      candidate: 'c',
      withCandidate: false,
      env: { NODE_ENV: 'test' },
    });
    expect(
      verdict
        .evidence!.trim()
        .split(' ')
        .filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n)),
    ).toEqual(['CI', 'HOME', ...(process.env.LANG ? ['LANG'] : []), 'NODE_ENV', 'PATH', 'TMPDIR']);
  });

  test('the command runs in the workspace', async () => {
    const verdict = await check('pwd');
    expect(realpathSync(verdict.evidence!.trim())).toBe(realpathSync(workspace));
  });

  test('a workspace that does not exist yet is created', async () => {
    const nested = path.join(workspace, 'not', 'yet');
    const verdict = await runCommandCheck({
      workflowId: WORKFLOW_ID,
      attempt: 2,
      check: { kind: 'command', name: 'test', command: 'pwd', timeout: '10s' },
      workspace: nested,
      candidate: 'c',
    });
    expect(verdict.passed).toBe(true);
    expect(existsSync(nested)).toBe(true);
  });

  test('a command that outlives its timeout fails quickly as timed out and leaves no process behind', async () => {
    const started = Date.now();
    const name = `sleep 6.${process.pid % 1000}`;
    const verdict = await check(`${name} & echo started; sleep 5.3`, '300ms');
    const elapsed = Date.now() - started;
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('timed out after 300ms');
    expect(verdict.evidence).toContain('started');
    // well before the 5.3 s foreground sleep would end on its own (slack for a loaded machine)
    expect(elapsed).toBeLessThan(4500);
    // the shell, its foreground sleep and its background sleep die with the sandbox
    expect(await waitNoneNamed(name)).toBe(true);
    expect(await waitNoneNamed('sleep 5.3')).toBe(true);
  });

  test('evidence is capped at EVIDENCE_CHARS and keeps the end of the output', async () => {
    const verdict = await check(`head -c ${EVIDENCE_CHARS * 3} /dev/zero | tr '\\0' x; echo; echo THE-END; exit 1`);
    expect(verdict.passed).toBe(false);
    expect(verdict.evidence!.length).toBe(EVIDENCE_CHARS);
    expect(verdict.evidence!.endsWith('\nTHE-END\n')).toBe(true);
    expect(verdict.requiredCorrection.length).toBeLessThan(2000);
  });
});

const cgroupHome = findCgroupHome();
(cgroupHome.kind === 'cgroup' ? test : test.skip)(
  `a command the sandbox cut short fails, even when it exits 0: its work may not have run${
    cgroupHome.kind === 'cgroup' ? '' : ` (skipped: no cgroup here: ${cgroupHome.reason})`
  }`,
  async () => {
    const sandbox = createSandbox(
      sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_SANDBOX_PIDS: '16', LOOPWRIGHT_SANDBOX_NICE: '0' }),
    );
    const run = (command: string) =>
      runCommandCheck(
        {
          workflowId: WORKFLOW_ID,
          attempt: 1,
          check: { kind: 'command', name: 'test', command, timeout: '30s' },
          workspace,
          candidate: '',
        },
        sandbox,
      );
    // 20 sleeps where 16 processes are allowed: a fork is refused (which ends the subshell that
    // tried it), and the script goes on and exits 0.
    const cut = await run(
      '(i=0; while [ $i -lt 20 ]; do sleep 5 & i=$((i + 1)); done) 2>/dev/null; kill -9 -1; exit 0',
    );
    expect(cut).toMatchObject({ passed: false, failedItems: ['test'] });
    expect(cut.reason).toMatch(/exited 0, but the sandbox cut it short: the command reached its limit of 16 processes/);
    expect(cut.evidence).toContain('[sandbox: the command reached its limit of 16 processes');
    // Within the limit, the same kind of script passes.
    const within = await run('(i=0; while [ $i -lt 4 ]; do sleep 5 & i=$((i + 1)); done); kill -9 -1; exit 0');
    expect(within).toMatchObject({ passed: true, reason: expect.stringContaining('exited 0') });
  },
  60_000,
);
