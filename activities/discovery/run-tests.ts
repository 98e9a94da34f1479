import { Context } from '@temporalio/activity';
import { spawnCapture, type Captured } from '../tools/spawn-capture';
import { parseFailingTests } from './failing-tests';
import type { DiscoveredItem } from '../../common/discovery';

/** Output kept from a test run (head and tail): enough for the failure lines of large suites. */
const OUTPUT_CAP = 2_000_000;

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/**
 * Runs `sh -c testCommand` in `cwd` (its own process group, killed on timeout or cancellation,
 * heartbeating inside an activity) and parses the failing tests from its output.
 */
export async function runTestCommand(input: { cwd: string; testCommand: string; timeoutMs: number }): Promise<{ failing: DiscoveredItem[]; run: Captured }> {
  const ctx = activityContext();
  const run = await spawnCapture(['sh', '-c', input.testCommand], {
    cwd: input.cwd,
    // No TTY: node's test runner prints TAP, jest and pytest print plain text.
    env: { ...process.env, CI: 'true', FORCE_COLOR: '0', NO_COLOR: '1' },
    timeoutMs: input.timeoutMs,
    capChars: OUTPUT_CAP,
    signal: ctx?.cancellationSignal,
    heartbeat: ctx ? () => ctx.heartbeat() : undefined,
  });
  return { failing: parseFailingTests(run.output), run };
}
