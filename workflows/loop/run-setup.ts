import { isCancellation } from '@temporalio/workflow';
import type { SessionSetup } from '../../common/agent';
import { runsCommands } from '../../common/loop-rules';
import { trustRecord, type Trust } from '../../common/trust-record';
import { acts, localActs, LOCAL_READ, TOOL_CALL } from '../activity-proxies';
import type { LoopRun } from './loop-run';
import { activityErrorMessage } from './record-keeping';

/**
 * Why this run's input cannot be taken as it is, or null. Resume state (the record, the trust it
 * pinned, its session) is what a run hands itself when it continues as new, and an evaluation is
 * a child of an improvement: a start that carries either without being one claims trust it was
 * never given (a forged `resume.trust` would skip the grant and the allowed signers, a forged
 * `evaluation` skips them too). Temporal sets `continuedFromExecutionRunId` and `parent`; no
 * caller can.
 */
export function forgedInput(
  input: { resume?: unknown; evaluation?: boolean },
  info: { continuedFromExecutionRunId?: string; parent?: unknown },
): string | null {
  if (input.resume !== undefined && !info.continuedFromExecutionRunId)
    return "refused: the run's input carries resume state, which only the run itself sets when it continues as new; start runs with the client (loopwright run)";
  if (input.evaluation && !info.parent)
    return "refused: the run's input says it is an evaluation, which only an improvement's child runs are; start runs with the client (loopwright run)";
  return null;
}

/**
 * Why an evaluation run is refused, or null: its parent (which Temporal names, no caller can) must
 * be an `improveWorkflow` on this run's own task queue, read by an activity (see
 * activities/run-origin.ts). A workflow of anyone's on another queue could otherwise start
 * an "evaluation" that pins no trust and needs no grant: L3, write tools in any folder.
 */
export async function foreignEvaluation(
  parent: { workflowId: string; runId: string } | undefined,
): Promise<string | null> {
  return acts.evaluationParentRefusal.executeWithOptions(
    { ...TOOL_CALL, summary: "check the evaluation is an improvement's" },
    [parent ? { workflowId: parent.workflowId, runId: parent.runId } : undefined],
  );
}

/**
 * Why a run that carries resume state is refused, or null: the run it continued from must be one
 * of `types` on this run's own task queue, read by an activity (see activities/run-origin.ts).
 * Temporal sets `continuedFromExecutionRunId`, but a workflow of anyone's on another queue can
 * continue as new into this one under the id it picks, carrying a forged record, trust and session.
 */
export async function foreignResume(
  info: { workflowId: string; continuedFromExecutionRunId?: string },
  types: readonly string[],
): Promise<string | null> {
  const runId = info.continuedFromExecutionRunId;
  const why = runId
    ? await acts.continuedFromRefusal.executeWithOptions(
        { ...TOOL_CALL, summary: 'check the run this one continued from' },
        [{ workflowId: info.workflowId, runId, types: [...types] }],
      )
    : 'it continued from no run';
  return why
    ? `refused: the run's input carries resume state, which only the run itself sets when it continues as new, but ${why}; start runs with the client (loopwright run)`
    : null;
}

/**
 * Reads what the run trusts from the worker's files (allowed signers, which decisions must be
 * signed, the autonomy grant) and pins it into the run and its record; undefined, with the
 * reason recorded, when a configured file cannot be read.
 */
export async function pinTrust(run: LoopRun, as: 'local' | 'activity'): Promise<Trust | undefined> {
  const { input, record } = run;
  const args: Parameters<typeof acts.loadTrust> = [
    {
      loop: input.loop,
      autonomy: input.spec.autonomy,
      commits: (input.spec.delivery?.effects ?? []).some((e) => e.kind === 'git_commit'),
      // A grant is for the loop as its definition plans it: the worker checks the spec against it.
      ...(input.spec.autonomy === 'L3' ? { planned: { spec: input.spec, input: input.input } } : {}),
    },
  ];
  const summary = `trust (${input.spec.autonomy})`;
  try {
    // 'local' since the patch 'lean-start' (see loop-workflow.ts); 'activity' replays older runs.
    run.trust =
      as === 'local'
        ? await localActs.loadTrust.executeWithOptions({ ...LOCAL_READ, summary }, args)
        : await acts.loadTrust.executeWithOptions({ ...TOOL_CALL, summary }, args);
    record.trust = trustRecord(run.trust);
    return run.trust;
  } catch (err) {
    if (isCancellation(err)) throw err;
    record.error = activityErrorMessage(err);
    return undefined;
  }
}

/** The agent's workspace and tools, once per run; null (with the reason recorded) when they cannot be had. */
export async function setUpSession(run: LoopRun): Promise<SessionSetup | null> {
  const { input, record } = run;
  if (!input.workspace) {
    record.error = 'this loop gives its agent tools, so the run needs a workspace folder (input "workspace")';
    return null;
  }
  try {
    const setup = await acts.prepareSession.executeWithOptions(
      { ...TOOL_CALL, summary: `prepare workspace (${input.spec.autonomy})` },
      [
        {
          workflowId: run.workflowId,
          workspace: input.workspace,
          autonomy: input.spec.autonomy,
          tools: input.spec.agent.tools,
          isolate: input.spec.delivery?.effects.some((e) => e.kind === 'git_commit'),
          runsCommands: runsCommands(input.spec),
        },
      ],
    );
    record.workspace = { root: setup.root, branch: setup.branch };
    if (setup.sandbox) record.sandbox = setup.sandbox;
    return setup;
  } catch (err) {
    if (isCancellation(err)) throw err;
    record.error = activityErrorMessage(err);
    return null;
  }
}

/**
 * A loop whose checks run commands, without agent tools: the worker must have its sandbox
 * (or have opted out) before the first attempt. False, with the one-line reason recorded, when not.
 */
export async function sandboxReady(run: LoopRun): Promise<boolean> {
  try {
    run.record.sandbox = await acts.checkSandbox.executeWithOptions({ ...TOOL_CALL, summary: 'check the sandbox' }, []);
    return true;
  } catch (err) {
    if (isCancellation(err)) throw err;
    run.record.error = activityErrorMessage(err);
    return false;
  }
}

/** Verification debt: a triggered run does not start while too many of the loop's runs wait for a human. */
export async function heldBack(run: LoopRun, resumed: boolean): Promise<boolean> {
  const { input } = run;
  const max = input.spec.maxPendingReviews;
  if (resumed || max === undefined || input.trigger.kind === 'cli' || input.trigger.kind === 'client') return false;
  const waiting = await acts.countPendingReviews.executeWithOptions(
    { ...TOOL_CALL, summary: `count ${input.loop} runs waiting for a human` },
    [{ loop: input.loop }],
  );
  if (waiting < max) return false;
  run.record.error = `verification debt: ${waiting} runs of loop ${input.loop} wait for a human (maxPendingReviews ${max}); this ${input.trigger.kind} run did not start`;
  return true;
}
