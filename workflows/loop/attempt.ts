import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { ToolCallRecord } from '../../common/agent';
import { judgeInputChars, summarizeVerdicts } from '../../common/code-review';
import { priceOf } from '../../common/pricing';
import { renderWorkerPrompt } from '../../common/prompts';
import type { StopReason, Verdict } from '../../common/run-record';
import { modelTimeouts, modelTimeoutsArg } from '../../common/loop-rules';
import { acts, CHECK_CALL, modelCallOptions, TOOL_CALL } from '../activity-proxies';
import { checkSummary, judgeCallSummary, workerCallSummary } from '../../common/activity-summary';
import type { LoopRun } from './loop-run';
import { callWithinBudget } from './model-call';
import type { SessionCheckpoint } from './resume';
import { runAgentSession } from './agent-session';
import { outputVerdict } from './record-keeping';

/** An attempt in progress: filled in as it goes, so a wall-time stop still has what was done. */
export interface AttemptProgress {
  candidate: string | null;
  verdicts: Verdict[];
  turns?: number;
  toolCalls?: ToolCallRecord[];
  commit?: string | null;
}

export type AttemptOutcome =
  | { kind: 'checked' }
  | { kind: 'stopped'; stopReason: StopReason; detail: string }
  /** The session paused between turns so the run can continue as new. */
  | { kind: 'suspended'; checkpoint: SessionCheckpoint };

/** The judge answers in at most this many tokens. */
const VERDICT_MAX_TOKENS = 1024;

/**
 * One attempt: the worker model produces a candidate, then every automated check judges it,
 * in the order the spec lists them. Human reviews happen after, outside the attempt's wall time.
 * A check, tool call or commit that fails on its last retry (its worker lost every time, or a
 * fault in it) stops the attempt with `activity_error` and the reason, so the run asks a human
 * instead of ending `failed` (model calls have their own retries, see model-call.ts).
 */
export async function runAttempt(
  run: LoopRun,
  n: number,
  progress: AttemptProgress,
  resumeFrom?: SessionCheckpoint,
): Promise<AttemptOutcome> {
  try {
    return await attemptSteps(run, n, progress, resumeFrom);
  } catch (err) {
    // A change (loopWorkflow asks patched()): a history recorded before it ended such a run `failed`, and replays so.
    if (!(err instanceof ActivityFailure) || isCancellation(err) || !run.has('activity-escalation')) throw err;
    const tries = err.retryState === 'MAXIMUM_ATTEMPTS_REACHED' ? ' on every retry' : '';
    return {
      kind: 'stopped',
      stopReason: 'activity_error',
      detail: `${err.activityType} failed${tries} in attempt ${n}: ${err.cause?.message ?? err.message}`,
    };
  }
}

async function attemptSteps(
  run: LoopRun,
  n: number,
  progress: AttemptProgress,
  resumeFrom: SessionCheckpoint | undefined,
): Promise<AttemptOutcome> {
  const { input, workflowId, session } = run;
  const workerModel = input.spec.models.worker;
  if (session) {
    const outcome = await runAgentSession(run, session, n, progress, resumeFrom);
    if (outcome.kind === 'suspended') return outcome;
    if (session.branch && progress.toolCalls?.some((c) => c.allowed)) {
      const branch = session.branch;
      progress.commit = (
        await acts.commitWorkspace.executeWithOptions({ ...TOOL_CALL, summary: `commit attempt ${n} on ${branch}` }, [
          { root: session.root, branch, message: `loopwright: attempt ${n} of ${workflowId}` },
        ])
      ).commit;
    }
    if (outcome.kind === 'stopped') return outcome;
    return verify(run, n, progress);
  }
  const generated = await callWithinBudget({
    what: `worker model call (attempt ${n})`,
    run,
    role: 'worker',
    inputChars: input.spec.agent.systemPrompt.length + renderWorkerPrompt(input.task, run.feedback).length,
    requestedMaxTokens: input.spec.agent.maxTokens,
    price: priceOf(workerModel, input.prices),
    invoke: (maxTokens, tryNo) =>
      acts.generateCandidate.executeWithOptions(
        { ...modelCallOptions(modelTimeouts(input.spec.models)), summary: workerCallSummary(workerModel, n, tryNo) },
        [
          {
            workflowId,
            attempt: n,
            model: workerModel,
            price: priceOf(workerModel, input.prices),
            systemPrompt: input.spec.agent.systemPrompt,
            task: input.task,
            feedback: [...run.feedback],
            maxTokens,
            ...modelTimeoutsArg(input.spec.models),
          },
        ],
      ),
  });
  if (!generated.ok) return { kind: 'stopped', stopReason: generated.stopReason, detail: generated.detail };
  progress.candidate = generated.value.candidate;
  return verify(run, n, progress);
}

/** Every automated check on the attempt's candidate, in the order the spec lists them. */
async function verify(run: LoopRun, n: number, progress: AttemptProgress): Promise<AttemptOutcome> {
  const { input, workflowId, session } = run;
  const checkerModel = input.spec.models.checker;
  const candidate = progress.candidate ?? '';
  run.transition('verifying');
  if (progress.verdicts.length > 0) return { kind: 'checked' }; // the session already failed it (step cap)
  if (candidate.trim() === '') {
    progress.verdicts.push(
      outputVerdict('the worker answered with no text', 'answer with the complete output as text'),
    );
    return { kind: 'checked' };
  }
  for (const check of input.spec.checks) {
    if (check.kind === 'human') continue;
    if (check.kind !== 'judge') {
      progress.verdicts.push(
        await acts.runCheck.executeWithOptions({ ...CHECK_CALL, summary: checkSummary(check.name, check.kind, n) }, [
          {
            workflowId,
            attempt: n,
            check,
            task: input.task,
            candidate,
            workspace: session?.root ?? input.workspace,
            baseRef: session?.base,
            ...(session?.branch ? { commit: progress.commit ?? null, isolated: true } : {}),
            // A check runs its command as the agent's run_command did: same sandbox, same environment.
            ...(input.spec.sandbox ? { env: input.spec.sandbox.env } : {}),
            ...(session ? { withCandidate: false } : {}),
          },
        ]),
      );
      continue;
    }
    // A judge of the change reads the diff (and the attempt's verdicts so far), not the agent's claims.
    const change =
      check.subject === 'change' && session?.base
        ? { root: session.root, base: session.base, commit: progress.commit ?? null }
        : undefined;
    const judged = await callWithinBudget({
      what: `judge ${check.name} (attempt ${n})`,
      run,
      role: 'checker',
      inputChars:
        judgeInputChars({ rubric: check.rubric, task: input.task, candidate, change: change !== undefined }) + 800,
      requestedMaxTokens: VERDICT_MAX_TOKENS,
      price: priceOf(checkerModel, input.prices),
      invoke: (maxTokens, tryNo) =>
        acts.judgeCandidate.executeWithOptions(
          {
            ...modelCallOptions(modelTimeouts(input.spec.models)),
            summary: judgeCallSummary(checkerModel, check.name, n, tryNo),
          },
          [
            {
              workflowId,
              attempt: n,
              model: checkerModel,
              price: priceOf(checkerModel, input.prices),
              check,
              task: input.task,
              candidate,
              maxTokens,
              ...modelTimeoutsArg(input.spec.models),
              ...(change ? { change, evidence: summarizeVerdicts(progress.verdicts) } : {}),
            },
          ],
        ),
    });
    if (!judged.ok) return { kind: 'stopped', stopReason: judged.stopReason, detail: judged.detail };
    progress.verdicts.push(pinnedRubric(judged.value, input.rubricHashes[check.name]));
  }
  return { kind: 'checked' };
}

/** A verdict given against another rubric than the one pinned at start does not count as a pass. */
function pinnedRubric(verdict: Verdict, rubricHash: string | undefined): Verdict {
  if (verdict.rubricHash === rubricHash) return verdict;
  return {
    ...verdict,
    passed: false,
    reason: `rubric_mismatch: verdict used ${verdict.rubricHash}, run pinned ${rubricHash}`,
  };
}
