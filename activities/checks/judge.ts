import type { JudgeCheck } from '../../common/loop-spec';
import type { ModelPrice } from '../../common/pricing';
import {
  JUDGE_SYSTEM_PROMPT,
  VERDICT_TOOL,
  VERDICT_TOOL_NAME,
  parseVerdict,
  renderJudgePrompt,
} from '../../common/judge';
import type { Verdict } from '../../common/run-record';
import type { ModelReply, ModelRequest } from '../model';
import { hashRubric } from './rubric-hash';

export interface JudgeInput {
  workflowId: string;
  attempt: number;
  model: string;
  check: JudgeCheck;
  task: string;
  candidate: string;
  /** max_tokens for the verdict, as the run's budget allows (at most 1024). */
  maxTokens: number;
  price: ModelPrice;
}

/**
 * The LLM judge. Its context is fresh: the judge system prompt and one message with the rubric,
 * the task and the delimited candidate; nothing of the worker's prompt or earlier attempts.
 * The verdict comes through a forced `submit_verdict` tool call and fails closed.
 */
export async function judgeCandidate(
  callModel: (req: ModelRequest) => Promise<ModelReply>,
  input: JudgeInput,
): Promise<Verdict> {
  const reply = await callModel({
    role: 'checker',
    model: input.model,
    workflowId: input.workflowId,
    attempt: input.attempt,
    system: JUDGE_SYSTEM_PROMPT,
    messages: [
      { role: 'user', content: renderJudgePrompt({ rubric: input.check.rubric, task: input.task, candidate: input.candidate }) },
    ],
    tools: [VERDICT_TOOL],
    toolChoice: { type: 'tool', name: VERDICT_TOOL_NAME },
    maxTokens: input.maxTokens,
    price: input.price,
  });
  const verdict = parseVerdict(reply.content);
  return {
    check: input.check.name,
    kind: 'judge',
    ...verdict,
    rubricHash: hashRubric(input.check.rubric),
    usage: reply.usage,
  };
}
