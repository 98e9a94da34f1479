import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createModelClient } from '../../activities/providers';
import { createFileBlobStore } from '../../activities/transcript/store';
import { LoopwrightClient } from '../../client/loopwright-client';
import { WORKER_TUNING } from '../../workers/create-worker';
import { installRuntime } from '../../workers/runtime';
import { benchInput, uniqueName, type SessionOptions, type SessionRun } from './session';

/** Options of {@link runLoopwrightSession}. */
export interface LoopwrightSessionOptions extends SessionOptions {
  /** Transcript store folder; default LOOPWRIGHT_TRANSCRIPTS (or .loopwright/transcripts). */
  transcripts?: string;
}

/**
 * Runs the bench session through the real `loopWorkflowV2`: `evaluate-optimize` with
 * `read_file`, started with `LoopwrightClient.run`, on an in-process worker with the real
 * activities pointed at the scripted model. Resolves once the run completed with the
 * expected number of turns, with its history; throws with the record's state otherwise.
 */
export async function runLoopwrightSession(opts: LoopwrightSessionOptions): Promise<SessionRun> {
  installRuntime();
  const taskQueue = opts.taskQueue ?? uniqueName('bench-loopwright');
  const env = {
    ANTHROPIC_BASE_URL: opts.modelUrl,
    ANTHROPIC_API_KEY: 'bench',
    TEMPORAL_ADDRESS: opts.address,
    LOOPWRIGHT_TASK_QUEUE: taskQueue,
  };
  const connection = await NativeConnection.connect({ address: opts.address });
  try {
    const activities = createActivities({
      model: createModelClient(env),
      ...(opts.transcripts ? { store: createFileBlobStore(opts.transcripts) } : {}),
    });
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: opts.workflowCode,
      activities,
      ...WORKER_TUNING,
    });
    const client = await LoopwrightClient.connect({ env });
    try {
      const started = Date.now();
      const workflowId = uniqueName(`bench-loopwright-${opts.turns}t`);
      const record = await worker.runUntil(async () => {
        await client.run('evaluate-optimize', benchInput(opts.turns, opts.workspace), { id: workflowId });
        return client.wait(workflowId);
      });
      const ms = Date.now() - started;
      const attempt = record.attempts[0];
      if (record.state !== 'completed' || attempt?.turns !== opts.turns) {
        const why = record.error ?? attempt?.reasons.join('; ') ?? 'no attempt';
        throw new Error(
          `loopwright session ${workflowId} ended ${record.state} after ${attempt?.turns ?? 0} of ${opts.turns} turns: ${why}`,
        );
      }
      const newContent = Array.from({ length: opts.turns - 1 }, (_, i) =>
        (attempt.toolCalls ?? []).filter((c) => c.turn === i + 1).reduce((sum, c) => sum + (c.bytes ?? 0), 0),
      );
      const history = await client.temporal.workflow.getHandle(workflowId).fetchHistory();
      return { workflowId, history, newContent, ms };
    } finally {
      await client.close();
    }
  } finally {
    await connection.close();
  }
}
