import {
  allHandlersFinished,
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { decisionWait } from '../../common/decision';
import type { LoopInput } from '../../common/loop-input';
import { runsCommands } from '../../common/loop-rules';
import type { RunRecord } from '../../common/run-record';
import { LoopAudit } from '../../common/search-attributes';
import { ZERO_USAGE } from '../../common/usage';
import { acts, TOOL_CALL } from '../activity-proxies';
import { decisionsAnswered, handleDecisions, letsEffectsHappen, refusalReason, signedChangeOf } from '../decisions';
import { stateQuery } from '../messages';
import { forDisplay, redact } from '../../common/redact';
import { auditWaitSummary } from '../../common/activity-summary';
import { identityAttributes } from '../../common/run-presentation';
import { runAttempt, type AttemptProgress } from './attempt';
import { runDetails } from './details';
import { activityErrorMessage, feedbackFrom } from './record-keeping';
import { withWallTime } from './wall-time';
import type { ResumeState } from './resume';
import { inAuditSample } from './audit';
import { deliver } from './deliver';
import { runMetrics } from './metrics';
import { LoopRun } from './loop-run';
import { reviews } from './reviews';
import { temporalHost, type CommandsVersion } from './run-host';
import {
  foreignEvaluation,
  foreignResume,
  forgedInput,
  heldBack,
  pinTrust,
  sandboxReady,
  setUpSession,
} from './run-setup';

/**
 * The verified run. Before every attempt and every model call the budgets (attempts, active
 * wall time, tokens, dollars) are checked in code; the worker model produces a candidate,
 * every check judges it, and a failing attempt's reasons and required corrections become
 * feedback for the next. All checks pass → `completed`. A spent budget or a model error that
 * retries cannot fix → `awaiting_human` until a decision signal (approve = human override,
 * reject, retry with guidance, extend the budget) or the escalation deadline
 * (→ `budget_exhausted` / `blocked`). Cancellation → `canceled`; a fault → `failed`. Every
 * ending returns the full record.
 *
 * New runs start as this type (clients, schedules, discovery); `loopWorkflow` is the same loop
 * for the runs started before it existed and for improvement evaluations, and asks Temporal
 * (`patched()`) about each change made since. Both are Loopwright runs everywhere (`list`,
 * `LOOP_RUN_TYPES`); this one issues fewer commands: no patch markers, no upsert that changes
 * nothing (two visibility writes and three events per run; README "Performance").
 */
export async function loopWorkflowV2(input: LoopInput): Promise<RunRecord> {
  return verifiedRun(input, 2);
}

/** The verified run as its first workflow type: see `loopWorkflowV2`. */
export async function loopWorkflow(input: LoopInput): Promise<RunRecord> {
  return verifiedRun(input, 1);
}

/** The workflow types of Loopwright's runs, newest first: what `list` and the visibility queries match. */
export const LOOP_RUN_TYPES: readonly string[] = [loopWorkflowV2.name, loopWorkflow.name];

async function verifiedRun(input: LoopInput, version: CommandsVersion): Promise<RunRecord> {
  const record = await runLoop(input, version);
  const trace = input.spec.delivery?.trace;
  if (trace && !input.evaluation)
    await writeTrace(
      record,
      trace.dir ?? (input.workspace ? `${input.workspace.replace(/\/+$/, '')}/.loopwright/traces` : undefined),
      input.workspace,
    );
  await decisionsAnswered();
  return record;
}

/**
 * The run's trace as a Markdown report (`delivery.trace`), written as it ends, whatever the
 * state: a canceled run writes it too (outside the canceled scope). A report that cannot be
 * written does not change how the run ended; the record says why.
 */
async function writeTrace(record: RunRecord, dir: string | undefined, workspace: string | undefined): Promise<void> {
  try {
    const written = await CancellationScope.nonCancellable(() =>
      acts.writeTraceReport.executeWithOptions({ ...TOOL_CALL, summary: 'trace report' }, [
        { workflowId: record.workflowId, dir, record, ...(workspace ? { workspace } : {}) },
      ]),
    );
    record.traceReport = { path: written.path, error: null };
  } catch (err) {
    record.traceReport = { path: null, error: activityErrorMessage(err) };
  }
}

async function runLoop(input: LoopInput, version: CommandsVersion): Promise<RunRecord> {
  const info = workflowInfo();
  // Trust is never taken from a caller: forged resume state or evaluation flag ends the run at once.
  const forged = forgedInput(input, info);
  if (forged) input = { ...input, resume: undefined, evaluation: undefined };
  const resume = input.resume as ResumeState | undefined;
  const run = new LoopRun(
    input,
    info.workflowId,
    temporalHost(version),
    runMetrics(input.loop, input.spec.autonomy, input.redact ?? []),
    resume,
  );
  const { record } = run;
  // Since 'resume-origin': carried state is taken only from a run of this deployment (checked below).
  const checkOrigin = Boolean(resume) && run.has('resume-origin');
  let inFlight = resume?.inFlight;
  /** Hands the run over to a fresh history (Temporal suggested it), carrying all of its state. */
  const handOver = async (suspended?: ResumeState['inFlight']): Promise<never> => {
    await condition(allHandlersFinished);
    return continueAsNew<typeof loopWorkflow>({ ...input, resume: run.resumeState(run.session, suspended) });
  };

  setHandler(stateQuery, () => run.snapshot());
  /** Whether the run's trust is pinned (or known to be absent): decisions that came before wait for it. */
  let trustSettled = (Boolean(resume) && !checkOrigin) || Boolean(input.evaluation);
  handleDecisions(
    info.workflowId,
    () => run.trust,
    () => record.decisions,
    {
      refusal: (d) => refusalReason(record, d, run.hasPending()),
      approvers: (d) =>
        d.kind === 'audit'
          ? input.spec.escalation.approvers
          : (record.escalation?.approvers ?? input.spec.escalation.approvers),
      // An approval that lets effects happen: signed by default where the worker has allowed signers.
      effects: (d) => letsEffectsHappen(record, run.trust, d),
      // Spending more, running again, overriding failed checks, auditing: signed too (runs pinned with signedChanges).
      change: (d) => signedChangeOf(record, d),
      wait: () => decisionWait(record),
    },
    (entry) => run.receive(entry),
    () => trustSettled,
  );

  const identity = {
    loop: input.loop,
    autonomy: input.spec.autonomy,
    ...(input.itemKey ? { itemKey: redact(input.itemKey, run.secrets) } : {}),
  };
  // Since 'lean-start', a new run shows its identity and first state in one upsert and reads its
  // trust record with a local activity: a search-attribute upsert and an activity's round trip are
  // a run's dearest server costs (README "Performance"). Runs begun before replay the old commands,
  // and a patch is only asked where the old code asked for 'trust', so no run gains a marker.
  const lean = !resume && !input.evaluation && run.has('lean-start');
  if (lean) run.transition('running', identity);
  else {
    upsertSearchAttributes(identityAttributes(identity));
    run.transition('running');
  }

  try {
    if (forged) {
      trustSettled = true;
      record.error = forged;
      return run.finish('blocked', 'setup_error');
    }
    if (checkOrigin) {
      const refused = await foreignResume(info, LOOP_RUN_TYPES);
      if (refused) {
        trustSettled = true;
        record.error = refused;
        return run.finish('blocked', 'setup_error');
      }
    }
    // Since 'evaluation-parent': an evaluation (no trust pinned, no grant asked) is taken only as
    // the child of an improvement of this deployment, never of anyone's workflow on another queue.
    if (input.evaluation && !resume && run.has('evaluation-parent')) {
      const refused = await foreignEvaluation(info.parent);
      if (refused) {
        record.error = refused;
        return run.finish('blocked', 'setup_error');
      }
    }
    if (lean || (!resume && !input.evaluation && run.has('trust'))) {
      const loaded = await pinTrust(run, lean ? 'local' : 'activity');
      trustSettled = true;
      if (!loaded) return run.finish('blocked', 'setup_error');
      if (!loaded.autonomy.granted) {
        record.error = loaded.autonomy.reason;
        return run.finish('blocked', 'not_granted');
      }
    }
    trustSettled = true;
    if (await heldBack(run, Boolean(resume))) return run.finish('blocked', 'verification_debt');
    const session = resume
      ? (resume.session ?? undefined)
      : input.spec.agent.tools.length
        ? await setUpSession(run)
        : undefined;
    if (session === null) return run.finish('blocked', 'setup_error');
    run.session = session;
    if (!resume && !session && runsCommands(input.spec) && run.has('sandbox-preflight') && !(await sandboxReady(run)))
      return run.finish('blocked', 'setup_error');
    for (;;) {
      if (!inFlight && record.attempts.length > 0 && workflowInfo().continueAsNewSuggested) await handOver();
      const spent = inFlight ? null : run.spent();
      if (spent) {
        const ended = run.decide(await run.escalate('budget', spent, run.describe(spent)), 'budget', spent);
        if (ended) return ended;
        continue;
      }
      const n = record.attempts.length + 1;
      record.attempt = n;
      const resumeFrom = inFlight?.checkpoint;
      if (!inFlight) run.attemptUsage = { ...ZERO_USAGE };
      inFlight = undefined;
      run.transition('running');
      const progress: AttemptProgress = { candidate: null, verdicts: [] };
      const remaining =
        record.budget.maxWallTimeMs === null ? undefined : record.budget.maxWallTimeMs - run.clock.used(Date.now());
      const attempt = await withWallTime(remaining, () => runAttempt(run, n, progress, resumeFrom));
      if (!attempt.expired && attempt.value.kind === 'suspended')
        await handOver({ n, attemptUsage: run.attemptUsage, checkpoint: attempt.value.checkpoint });
      const outcome =
        attempt.expired || attempt.value.kind === 'suspended'
          ? ({ kind: 'stopped', stopReason: 'time', detail: `wall time ran out during attempt ${n}` } as const)
          : attempt.value;
      if (outcome.kind === 'checked' && progress.candidate !== null && progress.verdicts.every((v) => v.passed)) {
        const reviewEnded = await reviews(run, progress, n);
        if (reviewEnded) return reviewEnded;
      }
      const stopped = outcome.kind === 'stopped' ? { reason: outcome.stopReason, detail: outcome.detail } : undefined;
      const recorded = run.recordAttempt({ ...progress, n, usage: run.attemptUsage, stopped });
      if (recorded.passed) return await awaitAudit(run, await deliver(run, recorded.candidate ?? '', n, session));
      const lesson = feedbackFrom(recorded);
      if (lesson) run.feedback.push(lesson);
      if (stopped) {
        const kind = stopped.reason === 'model_error' || stopped.reason === 'activity_error' ? 'error' : 'budget';
        const ended = run.decide(await run.escalate(kind, stopped.reason, stopped.detail), kind, stopped.reason);
        if (ended) return ended;
      }
    }
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) return run.finish('canceled', 'canceled');
    record.error = err instanceof Error ? err.message : String(err);
    return run.finish('failed', 'error');
  }
}

/**
 * A completed run that needs an audit (L3 effects, or one of the loop's audit samples) stays
 * open, with LoopAudit = needed, until a person records an audit decision (or 30 days pass).
 */
async function awaitAudit(run: LoopRun, done: RunRecord): Promise<RunRecord> {
  const { input } = run;
  if (input.evaluation) return done;
  if (done.state === 'completed' && !done.audit && inAuditSample(run.workflowId, input.spec.auditSample)) {
    done.audit = { needed: true, reason: `audit sample (${Math.round(input.spec.auditSample * 100)}% of passed runs)` };
  }
  if (!done.audit?.needed) return done;
  upsertSearchAttributes([{ key: LoopAudit, value: 'needed' }]);
  setCurrentDetails(forDisplay(`${runDetails(done)}\n\nwaiting for an audit: ${done.audit.reason}`, run.secrets));
  const reviewed = await condition(() => done.audit?.reviewedBy !== undefined, '30d', { summary: auditWaitSummary() });
  upsertSearchAttributes([{ key: LoopAudit, value: reviewed ? 'reviewed' : 'expired' }]);
  return done;
}
