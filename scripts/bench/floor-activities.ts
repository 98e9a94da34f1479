import { Context } from '@temporalio/activity';
import type { FeedbackEntry } from '../../common/prompts';
import { plainFeedback, plainJudgeCall, plainModelCaller, plainWorkerCall } from './plain-loop';

/** The floor workflow's activities: the plain loop's two model calls (same prompts, same SDK). */
export function floorActivities(modelUrl: string) {
  const callModel = plainModelCaller(modelUrl);
  const workflowId = () => Context.current().info.workflowExecution?.workflowId ?? 'floor';
  return {
    /** A short activity with a small answer, like Loopwright's loadTrust. */
    floorSetup: async (): Promise<{ granted: boolean }> => ({ granted: true }),
    floorWorker(task: string, attempt: number, feedback: FeedbackEntry[], heartbeat: boolean): Promise<string> {
      if (heartbeat) Context.current().heartbeat();
      return plainWorkerCall(callModel, workflowId(), attempt, task, feedback);
    },
    async floorJudge(
      task: string,
      rubric: string[],
      attempt: number,
      candidate: string,
      heartbeat: boolean,
    ): Promise<{ passed: boolean; feedback: FeedbackEntry }> {
      if (heartbeat) Context.current().heartbeat();
      const verdict = await plainJudgeCall(callModel, workflowId(), attempt, task, rubric, candidate);
      return { passed: verdict.passed, feedback: plainFeedback(attempt, candidate, verdict) };
    },
  };
}

export type FloorActivities = ReturnType<typeof floorActivities>;
