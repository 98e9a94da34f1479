import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EVIDENCE_CHARS, runCommandCheck } from '../../activities/checks/command';
import { runScratchDir } from '../../activities/checks/workspace';
import { ZERO_USAGE } from '../../common/usage';

const WORKFLOW_ID = `command-check-test/${process.pid}`;
let workspace: string;

beforeEach(() => {
  workspace = mkdtempSync(path.join(tmpdir(), 'loopwright-command-check-'));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));
afterAll(() => rmSync(runScratchDir(WORKFLOW_ID), { recursive: true, force: true }));

const check = (command: string, timeout = '10s', candidate = 'the candidate') =>
  runCommandCheck({ workflowId: WORKFLOW_ID, attempt: 1, check: { kind: 'command', name: 'test', command, timeout }, workspace, candidate });

/** True when the process is gone (or only a zombie waiting to be reaped). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

describe('runCommandCheck', () => {
  test('a command that exits 0 passes with its output as evidence', async () => {
    const verdict = await check('echo all good');
    expect(verdict).toMatchObject({ check: 'test', kind: 'command', passed: true, failedItems: [], requiredCorrection: '' });
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

  test('the candidate file is outside the workspace', async () => {
    const verdict = await check('printf %s "$LOOPWRIGHT_CANDIDATE_FILE"');
    expect(verdict.evidence).not.toContain(workspace);
    expect(existsSync(verdict.evidence!)).toBe(true);
  });

  test('the command runs in the workspace', async () => {
    const verdict = await check('pwd');
    expect(realpathSync(verdict.evidence!.trim())).toBe(realpathSync(workspace));
  });

  test('a workspace that does not exist yet is created', async () => {
    const nested = path.join(workspace, 'not', 'yet');
    const verdict = await runCommandCheck({ workflowId: WORKFLOW_ID, attempt: 2, check: { kind: 'command', name: 'test', command: 'pwd', timeout: '10s' }, workspace: nested, candidate: 'c' });
    expect(verdict.passed).toBe(true);
    expect(existsSync(nested)).toBe(true);
  });

  test('a command that outlives its timeout fails quickly as timed out and leaves no process behind', async () => {
    const started = Date.now();
    const verdict = await check('sleep 6.2 & echo $! > bg.pid; echo $$ > sh.pid; sleep 5.3', '300ms');
    const elapsed = Date.now() - started;
    expect(verdict.passed).toBe(false);
    expect(verdict.reason).toContain('timed out after 300ms');
    expect(elapsed).toBeLessThan(2500);
    const pids = ['sh.pid', 'bg.pid'].map((f) => Number(readFileSync(path.join(workspace, f), 'utf8').trim()));
    for (const pid of pids) expect(pid).toBeGreaterThan(0);
    // the shell, its foreground sleep and its background sleep share one process group
    await new Promise((r) => setTimeout(r, 100));
    expect(pids.filter((pid) => !gone(pid))).toEqual([]);
  });

  test('evidence is capped at EVIDENCE_CHARS and keeps the end of the output', async () => {
    const verdict = await check(`head -c ${EVIDENCE_CHARS * 3} /dev/zero | tr '\\0' x; echo; echo THE-END; exit 1`);
    expect(verdict.passed).toBe(false);
    expect(verdict.evidence!.length).toBe(EVIDENCE_CHARS);
    expect(verdict.evidence!.endsWith('\nTHE-END\n')).toBe(true);
    expect(verdict.requiredCorrection.length).toBeLessThan(2000);
  });
});
