import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { createModelClient } from '../../activities/providers';
import { DEFAULT_CHECKER_MODEL, DEFAULT_WORKER_MODEL } from '../../common/config';
import { renderWorkerPrompt } from '../../common/prompts';
import { getLoop } from '../../loops';
import { WORKER_TUNING } from '../../workers/create-worker';
import { installRuntime } from '../../workers/runtime';
import { createNaiveActivities } from './naive-activities';
import { naiveSessionWorkflow } from './naive-workflow';
import { benchInput, BUNDLER_LOGGER, uniqueName, type SessionOptions, type SessionRun } from './session';

/** Bundles the naive baseline's workflow (naive-workflow.ts), apart from Loopwright's bundle. */
export async function bundleNaiveWorkflow(): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath: require.resolve('./naive-workflow'), logger: BUNDLER_LOGGER });
}

/**
 * Runs the bench session through the naive baseline on its own task queue: the same task,
 * system prompt, model server and tool as the Loopwright session, but the whole conversation
 * passes through every model-turn activity. Resolves with its history once the model
 * answered after `turns` turns; throws otherwise.
 */
export async function runNaiveSession(opts: SessionOptions): Promise<SessionRun> {
  installRuntime();
  const taskQueue = opts.taskQueue ?? uniqueName('bench-naive');
  const loop = getLoop('evaluate-optimize');
  const input = benchInput(opts.turns, opts.workspace);
  const { task, spec } = loop.plan(loop.inputSchema.parse(input), {
    models: { worker: DEFAULT_WORKER_MODEL, checker: DEFAULT_CHECKER_MODEL },
    harness: loop.harness,
  });
  const native = await NativeConnection.connect({ address: opts.address });
  const connection = await Connection.connect({ address: opts.address });
  try {
    const activities = createNaiveActivities({
      model: createModelClient({ ANTHROPIC_BASE_URL: opts.modelUrl, ANTHROPIC_API_KEY: 'bench' }),
    });
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: opts.workflowCode,
      activities,
      ...WORKER_TUNING,
    });
    const client = new Client({ connection });
    const workflowId = uniqueName(`bench-naive-${opts.turns}t`);
    const started = Date.now();
    const result = await worker.runUntil(
      client.workflow.execute(naiveSessionWorkflow, {
        taskQueue,
        workflowId,
        args: [
          {
            task: renderWorkerPrompt(task, []),
            systemPrompt: spec.agent.systemPrompt,
            model: spec.models.worker,
            toolNames: input.tools,
            root: opts.workspace,
            maxTurns: input.maxTurns,
          },
        ],
      }),
    );
    const ms = Date.now() - started;
    if (result.turns !== opts.turns || result.text === '') {
      throw new Error(
        `naive session ${workflowId} took ${result.turns} of ${opts.turns} turns and ${result.text ? 'answered' : 'never answered'}`,
      );
    }
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    return { workflowId, history, newContent: result.newContent, ms };
  } finally {
    await connection.close();
    await native.close();
  }
}
