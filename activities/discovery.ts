import { existsSync, statSync } from 'node:fs';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError } from '@temporalio/client';
import { readConfig } from '../common/config';
import type { DiscoveredItem } from '../common/discovery';
import { ConfigError, LoopwrightError } from '../common/errors';
import type { LoopInput } from '../common/loop-input';
import { currentHarness, UnvouchedHarnessError } from '../harness/store';
import { planRun } from '../loops/plan-run';
import { readPrices } from '../common/pricing';
import { FailureType, nonRetryableFailure } from '../common/failure-types';
import { runTestCommand } from './discovery/run-tests';
import { SandboxUnavailableError, type Sandbox } from './sandbox/sandbox';

/** Input of `listFailingTests`. */
export interface ListFailingTestsInput {
  repo: string;
  testCommand: string;
  /** Default 10 minutes. */
  timeoutMs?: number;
}

/** Input of `planTriageRun`: one failing test of a repository. */
export interface PlanTriageRunInput {
  loop: string;
  repo: string;
  testCommand: string;
  failingTest: string;
  reportDir?: string;
  maxPendingReviews?: number;
  /** The discovery run that plans it (recorded as the run's trigger). */
  by: string;
}

/**
 * The discovery activities: find the failing tests of a repository, plan one run per test with
 * the worker's models and prices, and tell whether a run id is running or done.
 */
export function createDiscoveryActivities(env: Record<string, string | undefined>, sandbox?: Sandbox) {
  return {
    /**
     * Runs the test command in the repository with its runner's structured reporter (`sh -c` in
     * the worker's sandbox, 10 minutes by default, heartbeats; activities/tests/) and returns its
     * failing tests by identity, each with a stable key. A missing folder is a non-retryable
     * `DiscoveryError`, and so are a worker without a sandbox (the one-line reason says how to
     * install it or opt out), a command whose runner cannot be told, and a run that reported no
     * tests at all; a command that times out is retried.
     */
    async listFailingTests(input: ListFailingTestsInput): Promise<DiscoveredItem[]> {
      if (!existsSync(input.repo) || !statSync(input.repo).isDirectory()) {
        throw nonRetryableFailure(FailureType.Discovery, `repository ${input.repo} is not a folder on this worker`);
      }
      const { failing, run } = await runTestCommand(
        { cwd: input.repo, testCommand: input.testCommand, timeoutMs: input.timeoutMs ?? 600_000 },
        sandbox,
      ).catch((err: unknown) => {
        // No sandbox, or a runner that cannot be told from the command: the same again would fail the same way.
        if (err instanceof SandboxUnavailableError || err instanceof ConfigError)
          throw nonRetryableFailure(FailureType.Discovery, err.message);
        throw err;
      });
      if (run.timedOut)
        throw ApplicationFailure.create({
          type: FailureType.Discovery,
          message: `\`${input.testCommand}\` timed out in ${input.repo}`,
        });
      // No results is not "nothing fails": the runner did not report (see run.problem).
      if (run.results.length === 0) {
        throw nonRetryableFailure(
          FailureType.Discovery,
          `\`${input.testCommand}\` reported no tests in ${input.repo} (${run.runner}): ${run.problem ?? 'no results'}`,
        );
      }
      return failing;
    },

    /**
     * Plans a run of `loop` for one failing test, exactly as the client would (client/plan-run.ts),
     * with models and prices from this worker's environment. Invalid input is a non-retryable `InputError`.
     */
    async planTriageRun(input: PlanTriageRunInput): Promise<LoopInput> {
      const config = readConfig(env);
      try {
        const loopInput = {
          repo: input.repo,
          testCommand: input.testCommand,
          failingTest: input.failingTest,
          ...(input.reportDir ? { reportDir: input.reportDir } : {}),
          ...(input.maxPendingReviews ? { maxPendingReviews: input.maxPendingReviews } : {}),
        };
        const harness = await currentHarness(Context.current().client, Context.current().info.taskQueue, input.loop);
        return planRun(
          input.loop,
          loopInput,
          { models: { worker: config.workerModel, checker: config.checkerModel }, prices: readPrices(env) },
          { kind: 'discovery', by: input.by },
          harness,
        );
      } catch (err) {
        // A store no worker has run yet is read again when the activity is retried: a worker will.
        if (err instanceof LoopwrightError && !(err instanceof UnvouchedHarnessError))
          throw ApplicationFailure.create({ type: err.name, nonRetryable: true, message: err.message });
        throw err;
      }
    },

    /** Whether the run with this id is still running (`running`), has closed (`done`), or is unknown. */
    async describeRun(input: { workflowId: string }): Promise<'running' | 'done' | 'unknown'> {
      try {
        const description = await Context.current().client.workflow.getHandle(input.workflowId).describe();
        return description.status.name === 'RUNNING' ? 'running' : 'done';
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'unknown';
        throw err;
      }
    },
  };
}
