import { createModelCaller } from '../../activities/model';
import { createModelClient } from '../../activities/providers';
import {
  JUDGE_SYSTEM_PROMPT,
  parseVerdict,
  renderJudgePrompt,
  VERDICT_TOOL,
  VERDICT_TOOL_NAME,
} from '../../common/judge';
import { renderWorkerPrompt, type FeedbackEntry } from '../../common/prompts';
import { DEFAULT_CHECKER_MODEL, DEFAULT_WORKER_MODEL } from '../../common/config';
import { evaluateOptimize } from '../../loops/evaluate-optimize';

const FREE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

/** Loopwright's model caller (real SDK, streamed). */
export type ModelCaller = ReturnType<typeof createModelCaller>;

/** One plain run's outcome: whether the judge passed an attempt, and after how many. */
export interface PlainRun {
  passed: boolean;
  attempts: number;
}

/**
 * The loop without durability, in this process: the worker model answers `task`, the judge
 * (submit_verdict) reviews the answer against `rubric`, its failure feeds the next attempt, up to
 * `maxAttempts`. It makes the same model calls as an `evaluate-optimize` run (same prompts, same
 * model caller and real SDK, streamed, with the same `x-loopwright-*` headers), and nothing else:
 * no history, no timers, no budget, no record.
 */
/** The worker model's answer to `task` on `attempt`, with the judge's earlier feedback: one streamed call. */
export async function plainWorkerCall(
  callModel: ModelCaller,
  workflowId: string,
  attempt: number,
  task: string,
  feedback: FeedbackEntry[],
): Promise<string> {
  const answer = await callModel({
    role: 'worker',
    model: DEFAULT_WORKER_MODEL,
    price: FREE,
    workflowId,
    attempt,
    system: evaluateOptimize.harness.systemPrompt,
    messages: [{ role: 'user', content: renderWorkerPrompt(task, feedback) }],
    maxTokens: 4096,
  });
  return answer.text;
}

/** The judge's verdict (submit_verdict) on `candidate` against `rubric`: one streamed call. */
export async function plainJudgeCall(
  callModel: ModelCaller,
  workflowId: string,
  attempt: number,
  task: string,
  rubric: string[],
  candidate: string,
): Promise<ReturnType<typeof parseVerdict>> {
  const review = await callModel({
    role: 'checker',
    model: DEFAULT_CHECKER_MODEL,
    price: FREE,
    workflowId,
    attempt,
    system: JUDGE_SYSTEM_PROMPT,
    messages: [{ role: 'user', content: renderJudgePrompt({ rubric, task, candidate }) }],
    tools: [VERDICT_TOOL],
    toolChoice: { type: 'tool', name: VERDICT_TOOL_NAME },
    maxTokens: 1024,
  });
  return parseVerdict(review.content);
}

/** The judge's failure as the next attempt's feedback. */
export function plainFeedback(
  attempt: number,
  candidate: string,
  verdict: ReturnType<typeof parseVerdict>,
): FeedbackEntry {
  return {
    kind: 'attempt',
    attempt,
    candidate,
    failures: [
      {
        check: 'judge',
        reason: verdict.reason,
        failedItems: verdict.failedItems,
        requiredCorrection: verdict.requiredCorrection,
      },
    ],
  };
}

/**
 * The loop without durability, in this process: the worker model answers `task`, the judge
 * (submit_verdict) reviews the answer against `rubric`, its failure feeds the next attempt, up to
 * `maxAttempts`. It makes the same model calls as an `evaluate-optimize` run (same prompts, same
 * model caller and real SDK, streamed, with the same `x-loopwright-*` headers), and nothing else:
 * no history, no timers, no budget, no record.
 */
export async function runPlainLoop(
  callModel: ModelCaller,
  workflowId: string,
  task: string,
  rubric: string[],
  maxAttempts: number,
): Promise<PlainRun> {
  const feedback: FeedbackEntry[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const answer = await plainWorkerCall(callModel, workflowId, attempt, task, feedback);
    const verdict = await plainJudgeCall(callModel, workflowId, attempt, task, rubric, answer);
    if (verdict.passed) return { passed: true, attempts: attempt };
    feedback.push(plainFeedback(attempt, answer, verdict));
  }
  return { passed: false, attempts: maxAttempts };
}

/** The model caller the plain loop uses: Loopwright's, with the Anthropic adapter pointed at `modelUrl`. */
export function plainModelCaller(modelUrl: string): ModelCaller {
  return createModelCaller({ client: createModelClient({ ANTHROPIC_BASE_URL: modelUrl, ANTHROPIC_API_KEY: 'bench' }) });
}
