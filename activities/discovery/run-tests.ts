import { Context } from '@temporalio/activity';
import { defaultSandbox, type Sandbox, type SandboxedRun } from '../sandbox/sandbox';
import { parseFailingTests } from './failing-tests';
import type { DiscoveredItem } from '../../common/discovery';

/** Output kept from a test run (head and tail): enough for the failure lines of large suites. */
const OUTPUT_CAP = 2_000_000;

/** No TTY and no colours: node's test runner prints TAP, jest and pytest print plain text. */
const PLAIN_OUTPUT = { FORCE_COLOR: '0', NO_COLOR: '1' };

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/**
 * Runs `sh -c testCommand` in `cwd` inside the worker's sandbox (killed on timeout or
 * cancellation, heartbeating inside an activity) and parses the failing tests from its output.
 * The repository's tests are code someone else wrote: they get the same sandbox as the agent.
 */
export async function runTestCommand(
  input: { cwd: string; testCommand: string; timeoutMs: number; env?: Record<string, string> },
  sandbox: Sandbox = defaultSandbox(),
): Promise<{ failing: DiscoveredItem[]; run: SandboxedRun }> {
  const ctx = activityContext();
  const run = await sandbox.run(['sh', '-c', input.testCommand], {
    workspace: input.cwd,
    env: { ...PLAIN_OUTPUT, ...input.env },
    timeoutMs: input.timeoutMs,
    capChars: OUTPUT_CAP,
    signal: ctx?.cancellationSignal,
    heartbeat: ctx ? () => ctx.heartbeat() : undefined,
  });
  return { failing: parseFailingTests(run.output), run };
}
