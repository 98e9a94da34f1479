import { Context } from '@temporalio/activity';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from '../../common/duration';
import type { CommandCheck } from '../../common/loop-spec';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { runScratchDir } from './workspace';

/** How much of a command's output a verdict keeps as evidence (its tail). */
export const EVIDENCE_CHARS = 4000;

export interface CommandCheckInput {
  workflowId: string;
  attempt: number;
  check: CommandCheck;
  workspace: string;
  candidate: string;
}

/**
 * Runs a command check: `sh -c COMMAND` in the workspace, with the candidate in the file named
 * by LOOPWRIGHT_CANDIDATE_FILE. Exit 0 passes; the tail of stdout+stderr is the evidence. The
 * command is killed (its whole process group) on timeout or when the activity is cancelled.
 */
export async function runCommandCheck(input: CommandCheckInput): Promise<Verdict> {
  mkdirSync(input.workspace, { recursive: true });
  const scratch = runScratchDir(input.workflowId);
  const candidateFile = path.join(scratch, `attempt-${input.attempt}.candidate`);
  writeFileSync(candidateFile, input.candidate);
  const timeoutMs = parseDuration(input.check.timeout) ?? 300_000;
  const ctx = activityContext();
  const result = await new Promise<{ code: number | null; signal: string | null; output: string; timedOut: boolean }>((resolve, reject) => {
    const child = spawn('sh', ['-c', input.check.command], {
      cwd: input.workspace,
      detached: true,
      env: { ...process.env, LOOPWRIGHT_CANDIDATE_FILE: candidateFile, LOOPWRIGHT_ATTEMPT: String(input.attempt), LOOPWRIGHT_WORKFLOW_ID: input.workflowId },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let timedOut = false;
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-EVIDENCE_CHARS * 2);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    const beat = ctx ? setInterval(() => ctx.heartbeat(), 1000) : undefined;
    ctx?.cancellationSignal.addEventListener('abort', kill);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (beat) clearInterval(beat);
      resolve({ code, signal, output, timedOut });
    });
  });
  ctx?.cancellationSignal.throwIfAborted();
  const evidence = result.output.slice(-EVIDENCE_CHARS);
  const passed = result.code === 0 && !result.timedOut;
  const reason = passed
    ? `\`${input.check.command}\` exited 0`
    : result.timedOut
      ? `\`${input.check.command}\` timed out after ${input.check.timeout}`
      : `\`${input.check.command}\` exited ${result.code ?? result.signal}`;
  return {
    check: input.check.name,
    kind: 'command',
    passed,
    reason,
    failedItems: passed ? [] : [input.check.name],
    requiredCorrection: passed ? '' : `make \`${input.check.command}\` pass; its output ends with:\n${evidence.slice(-1500)}`,
    evidence,
    usage: { ...ZERO_USAGE },
  };
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
