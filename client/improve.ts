import { ScheduleOverlapPolicy } from '@temporalio/client';
import { parseDuration } from '../common/duration';
import { UsageError } from '../common/errors';
import type { LoopInput } from '../common/loop-input';
import { getLoop } from '../loops';
import { improveWorkflow, type ImprovementRecord, type ImproveInput } from '../workflows/improve/improve-workflow';
import { improveStateQuery } from '../workflows/messages';
import { addRegression } from '../harness/store';
import { priceOf } from '../common/pricing';
import { decode } from '../trace/history';
import { decodeHistory } from '../crypto/decode-history';
import { newRunId, startUnderFreshId } from './run-id';
import type { LoopwrightClient } from './loopwright-client';

/** Options of `loopwright improve` (strings as the CLI gives them). */
export interface ImproveOptions {
  since?: string;
  minOccurrences?: string;
  repeats?: string;
  heldOut?: string;
  reviewTimeout?: string;
  by?: string;
}

const int = (value: string | undefined, fallback: number, name: string, min: number, max: number): number => {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`${name} "${value}" is not a whole number from ${min} to ${max}`);
  return n;
};
const duration = (value: string | undefined, fallback: string, name: string): number => {
  const ms = parseDuration(value ?? fallback);
  if (ms === undefined || ms <= 0) throw new UsageError(`${name} "${value}" is not a duration: give e.g. 30m, 12h, 7d`);
  return ms;
};

/** The improvement workflow's input from the CLI's options, validated (UsageError, exit 2). */
export function improveInput(
  client: LoopwrightClient,
  loop: string,
  opts: ImproveOptions,
  env: Record<string, string | undefined>,
): ImproveInput {
  getLoop(loop);
  const share = opts.heldOut === undefined ? 0.3 : Number(opts.heldOut);
  if (!(share >= 0 && share < 1))
    throw new UsageError(`--held-out "${opts.heldOut}" is not a share from 0 to below 1, e.g. 0.3`);
  const model = env.LOOPWRIGHT_PROPOSER_MODEL?.trim() || client.config.workerModel;
  return {
    loop,
    windowMs: duration(opts.since, '7d', '--since'),
    minOccurrences: int(opts.minOccurrences, 3, '--min-occurrences', 2, 1000),
    repeats: int(opts.repeats, 3, '--repeats', 1, 20),
    heldOutShare: share,
    reviewTimeoutMs: duration(opts.reviewTimeout, '7d', '--review-timeout'),
    proposer: { model, price: priceOf(model, client.prices) },
    by: opts.by ?? 'cli',
  };
}

/** Starts an improvement run of `loop`; returns its id (`improve/<loop>/<time>-<hex>`). */
export async function startImprovement(client: LoopwrightClient, input: ImproveInput): Promise<string> {
  return startUnderFreshId(
    () => `improve/${newRunId(input.loop)}`,
    async (workflowId) => {
      await client.temporal.workflow.start(improveWorkflow, {
        taskQueue: client.config.taskQueue,
        workflowId,
        args: [input],
        staticSummary: `improve ${input.loop}: mine failures, propose, evaluate, review`,
      });
      return workflowId;
    },
  );
}

/** Runs `loopwright improve <loop>` on a Temporal Schedule every `every`; returns the schedule id (`improve-<task queue>-<loop>`). */
export async function scheduleImprovement(
  client: LoopwrightClient,
  input: ImproveInput,
  every: string,
): Promise<string> {
  const ms = duration(every, every, '--every');
  // One per deployment (task queue) and loop, like the harness store.
  const scheduleId = `improve-${client.config.taskQueue}-${input.loop}`;
  await client.temporal.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: ms }] },
    action: {
      type: 'startWorkflow',
      workflowType: improveWorkflow,
      args: [{ ...input, by: `schedule ${scheduleId}` }],
      taskQueue: client.config.taskQueue,
      workflowId: `improve/${input.loop}/scheduled`,
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
  });
  return scheduleId;
}

/** Whether `workflowId` is an improvement run (an unknown id is a RunNotFoundError). */
export async function isImprovement(client: LoopwrightClient, workflowId: string): Promise<boolean> {
  return (await client.workflowType(workflowId)) === improveWorkflow.name;
}

/** The improvement's record: live while it runs, its result once it ended. */
export async function improvementStatus(client: LoopwrightClient, workflowId: string): Promise<ImprovementRecord> {
  const handle = client.temporal.workflow.getHandle<typeof improveWorkflow>(workflowId);
  const { status } = await handle.describe();
  return status.name === 'RUNNING' ? handle.query(improveStateQuery) : handle.result();
}

/** Waits until the improvement ends or waits for a review. */
export async function waitImprovement(client: LoopwrightClient, workflowId: string): Promise<ImprovementRecord> {
  for (;;) {
    const r = await improvementStatus(client, workflowId);
    if (!['mining', 'proposing', 'evaluating'].includes(r.state)) return r;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** `regression add`: the user's input of run `runId` becomes a regression task of `loop`. */
export async function regressionFromRun(
  client: LoopwrightClient,
  req: { loop: string; runId: string; expect: 'pass' | 'fail'; by: string },
): Promise<string> {
  getLoop(req.loop);
  const fetched = await client.temporal.workflow
    .getHandle(req.runId)
    .fetchHistory()
    .catch(() => {
      throw new UsageError(`no run with id ${req.runId}: check the id with \`loopwright list\``);
    });
  const history = await decodeHistory(fetched, client.temporal.options.loadedDataConverter.payloadCodecs);
  const start = decode<LoopInput>(history.events?.[0]?.workflowExecutionStartedEventAttributes?.input);
  if (!start?.loop || start.input === undefined)
    throw new UsageError(`${req.runId} is not a loop run: give the id of a run of ${req.loop}`);
  if (start.loop !== req.loop) throw new UsageError(`${req.runId} is a run of ${start.loop}, not ${req.loop}`);
  return addRegression(
    client.temporal,
    client.config.taskQueue,
    {
      loop: req.loop,
      input: start.input,
      expect: req.expect,
      fromRun: req.runId,
      by: req.by,
    },
    (message) => client.sign(message),
  );
}
