import { randomBytes } from 'node:crypto';
import { mkdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from '../../common/duration';
import type { CommandCheck } from '../../common/loop-spec';
import type { Verdict } from '../../common/run-record';
import { ZERO_USAGE } from '../../common/usage';
import { defaultSandbox, type Sandbox } from '../sandbox/sandbox';
import { currentActivityContext } from '../activity-context';
import { runScratchDir } from './workspace';

/** How much of a command's output a verdict keeps as evidence (its tail). */
export const EVIDENCE_CHARS = 4000;

export interface CommandCheckInput {
  workflowId: string;
  attempt: number;
  check: CommandCheck;
  workspace: string;
  candidate: string;
  /** What the loop declares for its commands' environment (`spec.sandbox.env`). */
  env?: Record<string, string>;
  /**
   * Give the command the candidate in `$LOOPWRIGHT_CANDIDATE_FILE` (default true). Loops whose
   * agent runs commands itself pass false: their checks then run with exactly the profile and
   * environment the agent's `run_command` had, so a test cannot tell the gate from the agent.
   */
  withCandidate?: boolean;
}

/**
 * Runs a command check: `sh -c COMMAND` in the workspace, inside the worker's sandbox (the same
 * profile as the agent's `run_command`: no network, no secrets, only the workspace writable).
 * Exit 0 passes, unless the sandbox cut the command short (a limit it reached, a disk stop); the
 * tail of stdout+stderr is the evidence and the verdict says which sandbox ran it. The sandbox is killed on timeout or when the activity is cancelled. A worker without
 * a working sandbox (and no opt-out) throws SandboxUnavailableError.
 */
export async function runCommandCheck(input: CommandCheckInput, sandbox: Sandbox = defaultSandbox()): Promise<Verdict> {
  mkdirSync(input.workspace, { recursive: true });
  let file: { host: string; variable: string } | undefined;
  if (input.withCandidate !== false) {
    // One file per check (checks of an attempt may run at once), removed when it ends.
    const candidateFile = path.join(
      runScratchDir(input.workflowId),
      `attempt-${input.attempt}-${randomBytes(6).toString('hex')}.candidate`,
    );
    writeFileSync(candidateFile, input.candidate, { mode: 0o600, flag: 'wx' });
    file = { host: candidateFile, variable: 'LOOPWRIGHT_CANDIDATE_FILE' };
  }
  try {
    return await commandVerdict(input, sandbox, file);
  } finally {
    // The candidate is the run's data: it stays in the run's (sealed) history, not in clear in /tmp.
    if (file) {
      rmSync(file.host, { force: true });
      try {
        rmdirSync(path.dirname(file.host));
      } catch {
        // another check of the run is using the folder
      }
    }
  }
}

async function commandVerdict(
  input: CommandCheckInput,
  sandbox: Sandbox,
  file: { host: string; variable: string } | undefined,
): Promise<Verdict> {
  const timeoutMs = parseDuration(input.check.timeout) ?? 300_000;
  const ctx = currentActivityContext();
  const result = await sandbox.run(['sh', '-c', input.check.command], {
    workspace: input.workspace,
    env: input.env,
    file,
    timeoutMs,
    capChars: EVIDENCE_CHARS * 2,
    signal: ctx?.cancellationSignal,
    heartbeat: ctx ? () => ctx.heartbeat() : undefined,
  });
  const evidence = result.output.slice(-EVIDENCE_CHARS);
  // A command the sandbox cut short (a fork refused, a process killed for memory, a stop for the
  // disk) is no evidence, whatever it exited with: a script can go on to exit 0 after its work failed.
  const cut = result.limits?.[0];
  const passed = result.code === 0 && !result.timedOut && cut === undefined;
  const reason = passed
    ? `\`${input.check.command}\` exited 0`
    : result.timedOut
      ? `\`${input.check.command}\` timed out after ${input.check.timeout}`
      : cut !== undefined && result.code === 0
        ? `\`${input.check.command}\` exited 0, but the sandbox cut it short: ${cut.replace(/^\[sandbox: |\]$/g, '')}`
        : `\`${input.check.command}\` exited ${result.code ?? result.signal}`;
  return {
    check: input.check.name,
    kind: 'command',
    passed,
    reason,
    failedItems: passed ? [] : [input.check.name],
    requiredCorrection: passed
      ? ''
      : `make \`${input.check.command}\` pass; its output ends with:\n${evidence.slice(-1500)}`,
    evidence,
    sandbox: result.sandbox,
    usage: { ...ZERO_USAGE },
  };
}
