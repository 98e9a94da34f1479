import type Anthropic from '@anthropic-ai/sdk';
import type { AutomatedCheck } from '../common/loop-spec';
import type { ModelPrice } from '../common/pricing';
import { renderWorkerPrompt, type FeedbackEntry } from '../common/prompts';
import type { Verdict } from '../common/run-record';
import type { Usage } from '../common/usage';
import { runCommandCheck } from './checks/command';
import { judgeCandidate, type JudgeInput } from './checks/judge';
import { runSchemaCheck } from './checks/schema';
import { defaultWorkspace } from './checks/workspace';
import { createModelCaller } from './model';

export interface ActivityDeps {
  anthropic: Anthropic;
}

export interface GenerateCandidateInput {
  workflowId: string;
  attempt: number;
  model: string;
  price: ModelPrice;
  systemPrompt: string;
  task: string;
  feedback: FeedbackEntry[];
  /** max_tokens, as the run's budget allows. */
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
  check: Exclude<AutomatedCheck, { kind: 'judge' }>;
  task: string;
  candidate: string;
  workspace?: string;
}

/**
 * The activities of a Loopwright worker, built from their dependencies so tests can point
 * them at a scripted model server. Model errors surface as ApplicationFailures typed
 * `ModelRetryableError` / `ModelRequestError` whose details carry any usage the provider
 * reported (see model-errors.ts); the workflow charges it and decides whether to retry.
 */
export function createActivities(deps: ActivityDeps) {
  const callModel = createModelCaller({ anthropic: deps.anthropic });
  return {
    /**
     * One worker turn: the task plus the feedback of every earlier attempt, answered by the
     * worker model. Its usage (tokens and cost at the pinned price) is charged by the workflow.
     */
    async generateCandidate(input: GenerateCandidateInput): Promise<GenerateCandidateResult> {
      const reply = await callModel({
        role: 'worker',
        model: input.model,
        price: input.price,
        workflowId: input.workflowId,
        attempt: input.attempt,
        system: input.systemPrompt,
        messages: [{ role: 'user', content: renderWorkerPrompt(input.task, input.feedback) }],
        maxTokens: input.maxTokens,
      });
      return { candidate: reply.text, stopReason: reply.stopReason, usage: reply.usage };
    },

    /** The LLM judge on one candidate, in a fresh context; fails closed (see checks/judge.ts). */
    async judgeCandidate(input: JudgeInput): Promise<Verdict> {
      return judgeCandidate(callModel, input);
    },

    /** A check that needs no model: a command in the run's workspace, or a JSON Schema. */
    async runCheck(input: RunCheckInput): Promise<Verdict> {
      switch (input.check.kind) {
        case 'command':
          return runCommandCheck({ ...input, check: input.check, workspace: input.workspace ?? defaultWorkspace(input.workflowId) });
        case 'schema':
          return runSchemaCheck(input.check, input.candidate);
      }
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
