import type { DiscoveredItem } from '../../common/discovery';
import type { TestRunner } from '../../common/test-results';
import { defaultSandbox, type Sandbox } from '../sandbox/sandbox';
import { runTests, type TestRun } from '../tests/run-tests';
import { currentActivityContext } from '../activity-context';
import { failingTestItems } from './failing-tests';

/**
 * Runs `testCommand` in `cwd` through the test-results layer (activities/tests/run-tests.ts: the
 * runner's structured reporter, inside the worker's sandbox, killed on timeout or cancellation,
 * heartbeating inside an activity) and returns the run and its failing tests as work items.
 * The repository's tests are code someone else wrote: they get the same sandbox as the agent.
 * Throws UnknownTestRunnerError (a ConfigError) when the runner cannot be told from the command.
 */
export async function runTestCommand(
  input: {
    cwd: string;
    testCommand: string;
    timeoutMs: number;
    env?: Record<string, string>;
    runner?: TestRunner;
    junitPath?: string;
  },
  sandbox: Sandbox = defaultSandbox(),
): Promise<{ failing: DiscoveredItem[]; run: TestRun }> {
  const ctx = currentActivityContext();
  const run = await runTests(
    { command: input.testCommand, runner: input.runner, junitPath: input.junitPath },
    {
      sandbox,
      workspace: input.cwd,
      env: input.env,
      timeoutMs: input.timeoutMs,
      signal: ctx?.cancellationSignal,
      heartbeat: ctx ? () => ctx.heartbeat() : undefined,
    },
  );
  return { failing: failingTestItems(run), run };
}
