import type Anthropic from '@anthropic-ai/sdk';
import type { Check } from '../common/loop-spec';
import type { ModelPrice } from '../common/pricing';
import { renderWorkerPrompt, type FeedbackEntry } from '../common/prompts';
import type { Verdict } from '../common/run-record';
import type { Usage } from '../common/usage';
import { judgeCandidate } from './checks/judge';
import { createModelCaller } from './model';

export interface ActivityDeps {
  anthropic: Anthropic;
  prices?: Record<string, ModelPrice>;
}

export interface GenerateCandidateInput {
  workflowId: string;
  attempt: number;
  model: string;
  systemPrompt: string;
  task: string;
  feedback: FeedbackEntry[];
  maxTokens: number;
}

export interface GenerateCandidateResult {
  candidate: string;
  stopReason: string | null;
  usage: Usage;
}

export interface RunCheckInput {
  workflowId: string;
  attempt: number;
  checkerModel: string;
  check: Check;
  task: string;
  candidate: string;
}

/**
 * The activities of a Loopwright worker, built from their dependencies so tests can point
 * them at a scripted model server. Model errors surface as ApplicationFailures typed
 * `ModelRetryableError` / `ModelRequestError` (see model-errors.ts).
 */
export function createActivities(deps: ActivityDeps) {
  const callModel = createModelCaller({ anthropic: deps.anthropic, prices: deps.prices });
  return {
    /**
     * One worker turn: the task plus the feedback of every earlier attempt, answered by the
     * worker model. Charges the call's usage to the run through its result.
     */
    async generateCandidate(input: GenerateCandidateInput): Promise<GenerateCandidateResult> {
      const reply = await callModel({
        role: 'worker',
        model: input.model,
        workflowId: input.workflowId,
        attempt: input.attempt,
        system: input.systemPrompt,
        messages: [{ role: 'user', content: renderWorkerPrompt(input.task, input.feedback) }],
        maxTokens: input.maxTokens,
      });
      return { candidate: reply.text, stopReason: reply.stopReason, usage: reply.usage };
    },

    /** Runs one independent check on a candidate and returns its verdict with evidence and usage. */
    async runCheck(input: RunCheckInput): Promise<Verdict> {
      switch (input.check.kind) {
        case 'judge':
          return judgeCandidate(callModel, { ...input, model: input.checkerModel, check: input.check });
      }
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
