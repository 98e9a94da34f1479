import { allHandlersFinished, CancellationScope, condition, ContinueAsNew, continueAsNew, isCancellation, patched, setCurrentDetails, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Decision } from '../common/decision';
import { trustRecord, type Trust } from '../common/trust-record';
import { parseDuration } from '../common/duration';
import type { LoopInput } from '../common/loop-input';
import { runsCommands } from '../common/loop-rules';
import type { FeedbackEntry } from '../common/prompts';
import type { Escalation, RunRecord, RunState, StopReason, Verdict } from '../common/run-record';
import { LoopAttempt, LoopAudit, LoopAutonomy, LoopCostUsd, LoopItemKey, LoopName, LoopState, LoopTokens } from '../common/search-attributes';
import { ZERO_USAGE, addUsage, type Usage } from '../common/usage';
import { ActiveClock } from './active-clock';
import { acts, TOOL_CALL } from './activity-proxies';
import { runAttempt, type AttemptProgress } from './attempt';
import type { SessionSetup } from '../common/agent';
import { attemptStop, describeStop, extendLimits, extensionOf, limitsIn, setLimits, type BudgetUse } from '../common/budget';
import { handleDecisions, refusalReason } from './decisions';
import { runDetails } from './details';
import { stateQuery } from './messages';
import { activityErrorMessage, chargeUsage, feedbackFrom, newRecord, recordAttempt } from './record-keeping';
import { withWallTime } from './wall-time';
import type { ResumeState } from './resume';
import { inAuditSample } from './audit';
import { deliver, type DeliveryContext } from './deliver';
import { runMetrics } from './metrics';
import { forDisplay, redact } from '../common/redact';
import { auditWaitSummary, HUMAN_WAIT_MAX_CHARS, humanWaitSummary } from '../common/activity-summary';

/**
 * The verified run. Before every attempt and every model call the budgets (attempts, active
 * wall time, tokens, dollars) are checked in code; the worker model produces a candidate,
 * every check judges it, and a failing attempt's reasons and required corrections become
 * feedback for the next. All checks pass → `completed`. A spent budget or a model error that
 * retries cannot fix → `awaiting_human` until a decision signal (approve = human override,
 * reject, retry with guidance, extend the budget) or the escalation deadline
 * (→ `budget_exhausted` / `blocked`). Cancellation → `canceled`; a fault → `failed`. Every
 * ending returns the full record.
 */
export async function loopWorkflow(input: LoopInput): Promise<RunRecord> {
  const record = await runLoop(input);
  const trace = input.spec.delivery?.trace;
  if (trace && !input.evaluation) await writeTrace(record, trace.dir ?? (input.workspace ? `${input.workspace.replace(/\/+$/, '')}/.loopwright/traces` : undefined), input.workspace);
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
      acts.writeTraceReport.executeWithOptions({ ...TOOL_CALL, summary: 'trace report' }, [{ workflowId: record.workflowId, dir, record, ...(workspace ? { workspace } : {}) }]),
    );
    record.traceReport = { path: written.path, error: null };
  } catch (err) {
    record.traceReport = { path: null, error: activityErrorMessage(err) };
  }
}

async function runLoop(input: LoopInput): Promise<RunRecord> {
  const info = workflowInfo();
  const resume = input.resume as ResumeState | undefined;
  const record = resume?.record ?? newRecord(info.workflowId, input, new Date().toISOString());
  // Date.now() in workflow code is Temporal's workflow time (the current workflow task's start),
  // replayed identically: the sandbox makes it deterministic, so the active clock may use it.
  const clock = new ActiveClock(Date.now(), resume?.activeMs ?? 0);
  // The record's budget holds the limits: pinned at start, changed only by a human decision.
  const limits = () => limitsIn(record.budget);
  const feedback: FeedbackEntry[] = resume?.feedback ?? [];
  let pending: Decision | undefined;
  let attemptUsage: Usage = resume?.inFlight?.attemptUsage ?? { ...ZERO_USAGE };
  let inFlight = resume?.inFlight;
  /** Hands the run over to a fresh history (Temporal suggested it), carrying all of its state. */
  const handOver = async (session: SessionSetup | undefined, suspended?: ResumeState['inFlight']): Promise<never> => {
    await condition(allHandlersFinished);
    const state: ResumeState = { record, feedback, limits: limits(), activeMs: clock.used(Date.now()), session: session ?? null, inFlight: suspended, ...(trust ? { trust } : {}) };
    return continueAsNew<typeof loopWorkflow>({ ...input, resume: state });
  };
  const escalationMs = parseDuration(input.spec.escalation.timeout) ?? 86_400_000;
  const metrics = runMetrics(input.loop, input.spec.autonomy, input.redact ?? []);
  /** What the run keeps out of search attributes and the Web UI (the worker's reports and traces also redact its secret values). */
  const secrets = { names: input.redact ?? [] };

  const used = (): BudgetUse => ({ ...record.budget.used, attempts: record.attempts.length, wallTimeMs: clock.used(Date.now()) });
  const charge = (role: 'worker' | 'checker', usage: Usage) => {
    chargeUsage(record, role, usage);
    metrics.charged(role, usage);
    attemptUsage = addUsage(attemptUsage, usage);
  };

  setHandler(stateQuery, () => {
    record.budget.used.wallTimeMs = clock.used(Date.now());
    return record;
  });
  // What the run trusts (allowed signers, signed decisions, its autonomy grant), pinned at start.
  let trust: Trust | undefined = resume?.trust;
  handleDecisions(info.workflowId, () => trust, () => record.decisions, {
    refusal: (d) => refusalReason(record, d, pending !== undefined),
    approvers: (d) => (d.kind === 'audit' ? input.spec.escalation.approvers : (record.escalation?.approvers ?? input.spec.escalation.approvers)),
    // An approval that lets effects happen: signed by default where the worker has allowed signers.
    effects: (d) => d.kind === 'approve' && record.state === 'awaiting_human' && record.escalation?.kind === 'approval',
  }, (entry) => {
    if (entry.kind === 'audit') {
      record.audit = { ...record.audit!, reviewedBy: entry.by, verdict: entry.verdict, note: entry.note, at: entry.at };
    } else {
      pending = entry;
      record.decision = entry;
    }
  });

  const transition = (state: RunState): void => {
    record.state = state;
    record.budget.used.wallTimeMs = clock.used(Date.now());
    upsertSearchAttributes([
      { key: LoopState, value: state },
      { key: LoopAttempt, value: record.attempt },
      { key: LoopCostUsd, value: record.usage.total.costUsd },
      { key: LoopTokens, value: record.budget.used.tokens },
    ]);
    setCurrentDetails(forDisplay(runDetails(record), secrets));
  };
  const finish = (state: RunState, stopReason: StopReason, output: string | null = null): RunRecord => {
    clock.pause(Date.now());
    record.stopReason = stopReason;
    record.output = output;
    record.ok = state === 'completed';
    record.endedAt = new Date().toISOString();
    transition(state);
    metrics.ended(record);
    return record;
  };
  /** Waits in awaiting_human (the active clock paused) for one decision or the deadline. */
  const escalate = async (kind: Escalation['kind'], stopReason: StopReason, reason: string, approvers: string[] = input.spec.escalation.approvers): Promise<Decision | undefined> => {
    const now = Date.now();
    clock.pause(now);
    record.stopReason = stopReason;
    record.escalation = { kind, stopReason, reason, since: new Date(now).toISOString(), deadline: new Date(now + escalationMs).toISOString(), timedOut: false, approvers };
    transition('awaiting_human');
    if (input.evaluation) {
      // An evaluation's child run asks nobody: the escalation is its verdict.
      record.escalation.timedOut = true;
      clock.resume(now);
      return undefined;
    }
    const decided = await condition(() => pending !== undefined, escalationMs, { summary: forDisplay(humanWaitSummary(reason), secrets).slice(0, HUMAN_WAIT_MAX_CHARS) });
    if (!decided) record.escalation.timedOut = true;
    const decision = pending;
    pending = undefined;
    metrics.waited(kind, Date.now() - now, decided);
    clock.resume(Date.now());
    return decision;
  };
  /** Applies a decision on a budget or error escalation; returns the record when the run ends. */
  const decide = (decision: Decision | undefined, kind: 'budget' | 'error', stopReason: StopReason): RunRecord | undefined => {
    if (!decision) return kind === 'budget' ? finish('budget_exhausted', stopReason) : finish('blocked', stopReason);
    const at = new Date().toISOString();
    switch (decision.kind) {
      case 'approve': {
        record.override = true;
        const last = [...record.attempts].reverse().find((a) => a.candidate !== null);
        return finish('completed', 'approved', last?.candidate ?? null);
      }
      case 'reject':
        return finish('rejected', 'rejected');
      case 'retry':
        setLimits(record.budget, { ...limits(), maxAttempts: Math.max(record.budget.maxAttempts, record.attempts.length) + decision.attempts });
        feedback.push({ kind: 'human', by: decision.by, guidance: decision.guidance });
        record.budget.extensions.push({ by: decision.by, at, attempts: decision.attempts, guidance: decision.guidance });
        break;
      case 'extend':
        setLimits(record.budget, extendLimits(limits(), extensionOf(decision)));
        record.budget.extensions.push({ by: decision.by, at, attempts: decision.attempts, tokens: decision.tokens, costUsd: decision.costUsd, wallTime: decision.wallTime });
        break;
    }
    return undefined;
  };

  const delivery: DeliveryContext = { input, workflowId: info.workflowId, record, limits, secrets, finish, transition, escalate };

  upsertSearchAttributes([
    { key: LoopName, value: input.loop },
    { key: LoopAutonomy, value: input.spec.autonomy },
    ...(input.itemKey ? [{ key: LoopItemKey, value: redact(input.itemKey, secrets) }] : []),
  ]);
  transition('running');

  try {
    if (!resume && !input.evaluation && patched('trust')) {
      const loaded = await pinTrust();
      if (!loaded) return finish('blocked', 'setup_error');
      if (!loaded.autonomy.granted) {
        record.error = loaded.autonomy.reason;
        return finish('blocked', 'not_granted');
      }
    }
    if (await heldBack()) return finish('blocked', 'verification_debt');
    const session = resume ? (resume.session ?? undefined) : input.spec.agent.tools.length ? await setUpSession() : undefined;
    if (session === null) return finish('blocked', 'setup_error');
    if (!resume && !session && runsCommands(input.spec) && patched('sandbox-preflight') && !(await sandboxReady())) return finish('blocked', 'setup_error');
    for (;;) {
      if (!inFlight && record.attempts.length > 0 && workflowInfo().continueAsNewSuggested) await handOver(session);
      const spent = inFlight ? null : attemptStop(limits(), used());
      if (spent) {
        const ended = decide(await escalate('budget', spent, describeStop(spent, limits(), used())), 'budget', spent);
        if (ended) return ended;
        continue;
      }
      const n = record.attempts.length + 1;
      record.attempt = n;
      const resumeFrom = inFlight?.checkpoint;
      if (!inFlight) attemptUsage = { ...ZERO_USAGE };
      inFlight = undefined;
      transition('running');
      const progress: AttemptProgress = { candidate: null, verdicts: [] };
      const remaining = record.budget.maxWallTimeMs === null ? undefined : record.budget.maxWallTimeMs - clock.used(Date.now());
      const run = await withWallTime(remaining, () =>
        runAttempt(
          {
            workflowId: info.workflowId, input, feedback, limits, used, charge, enterVerifying: () => transition('verifying'), session,
            shouldContinueAsNew: () => workflowInfo().continueAsNewSuggested, resumeFrom,
          },
          n,
          progress,
        ),
      );
      if (!run.expired && run.value.kind === 'suspended') await handOver(session, { n, attemptUsage, checkpoint: run.value.checkpoint });
      const outcome = run.expired || run.value.kind === 'suspended' ? ({ kind: 'stopped', stopReason: 'time', detail: `wall time ran out during attempt ${n}` } as const) : run.value;
      if (outcome.kind === 'checked' && progress.candidate !== null && progress.verdicts.every((v) => v.passed)) {
        const reviewEnded = await reviews(progress, n);
        if (reviewEnded) return reviewEnded;
      }
      const stopped = outcome.kind === 'stopped' ? { reason: outcome.stopReason, detail: outcome.detail } : undefined;
      const attempt = recordAttempt(record, { ...progress, n, usage: attemptUsage, stopped });
      metrics.verdicts(attempt.verdicts);
      if (attempt.passed) return await awaitAudit(await deliver(delivery, attempt.candidate ?? '', n, session));
      const lesson = feedbackFrom(attempt);
      if (lesson) feedback.push(lesson);
      if (stopped) {
        const kind = stopped.reason === 'model_error' || stopped.reason === 'activity_error' ? 'error' : 'budget';
        const ended = decide(await escalate(kind, stopped.reason, stopped.detail), kind, stopped.reason);
        if (ended) return ended;
      }
    }
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err)) return finish('canceled', 'canceled');
    record.error = err instanceof Error ? err.message : String(err);
    return finish('failed', 'error');
  }

  /**
   * Reads what the run trusts from the worker's files (allowed signers, which decisions must be
   * signed, the autonomy grant) and pins it into the record; undefined, with the reason
   * recorded, when a configured file cannot be read.
   */
  async function pinTrust(): Promise<Trust | undefined> {
    try {
      trust = await acts.loadTrust.executeWithOptions({ ...TOOL_CALL, summary: `trust (${input.spec.autonomy})` }, [
        { loop: input.loop, autonomy: input.spec.autonomy, commits: (input.spec.delivery?.effects ?? []).some((e) => e.kind === 'git_commit') },
      ]);
      record.trust = trustRecord(trust);
      return trust;
    } catch (err) {
      if (isCancellation(err)) throw err;
      record.error = activityErrorMessage(err);
      return undefined;
    }
  }

  /** The agent's workspace and tools, once per run; null (with the reason recorded) when they cannot be had. */
  async function setUpSession(): Promise<SessionSetup | null> {
    if (!input.workspace) {
      record.error = 'this loop gives its agent tools, so the run needs a workspace folder (input "workspace")';
      return null;
    }
    try {
      const setup = await acts.prepareSession.executeWithOptions({ ...TOOL_CALL, summary: `prepare workspace (${input.spec.autonomy})` }, [
        {
          workflowId: info.workflowId, workspace: input.workspace, autonomy: input.spec.autonomy, tools: input.spec.agent.tools,
          isolate: input.spec.delivery?.effects.some((e) => e.kind === 'git_commit'), runsCommands: runsCommands(input.spec),
        },
      ]);
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
  async function sandboxReady(): Promise<boolean> {
    try {
      record.sandbox = await acts.checkSandbox.executeWithOptions({ ...TOOL_CALL, summary: 'check the sandbox' }, []);
      return true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      record.error = activityErrorMessage(err);
      return false;
    }
  }

  /**
   * A completed run that needs an audit (L3 effects, or one of the loop's audit samples) stays
   * open, with LoopAudit = needed, until a person records an audit decision (or 30 days pass).
   */
  async function awaitAudit(done: RunRecord): Promise<RunRecord> {
    if (input.evaluation) return done;
    if (done.state === 'completed' && !done.audit && inAuditSample(info.workflowId, input.spec.auditSample)) {
      done.audit = { needed: true, reason: `audit sample (${Math.round(input.spec.auditSample * 100)}% of passed runs)` };
    }
    if (!done.audit?.needed) return done;
    upsertSearchAttributes([{ key: LoopAudit, value: 'needed' }]);
    setCurrentDetails(forDisplay(`${runDetails(done)}\n\nwaiting for an audit: ${done.audit.reason}`, secrets));
    const reviewed = await condition(() => done.audit?.reviewedBy !== undefined, '30d', { summary: auditWaitSummary() });
    upsertSearchAttributes([{ key: LoopAudit, value: reviewed ? 'reviewed' : 'expired' }]);
    return done;
  }

  /** Verification debt: a triggered run does not start while too many of the loop's runs wait for a human. */
  async function heldBack(): Promise<boolean> {
    const max = input.spec.maxPendingReviews;
    if (resume || max === undefined || input.trigger.kind === 'cli' || input.trigger.kind === 'client') return false;
    const waiting = await acts.countPendingReviews.executeWithOptions({ ...TOOL_CALL, summary: `count ${input.loop} runs waiting for a human` }, [{ loop: input.loop }]);
    if (waiting < max) return false;
    record.error = `verification debt: ${waiting} runs of loop ${input.loop} wait for a human (maxPendingReviews ${max}); this ${input.trigger.kind} run did not start`;
    return true;
  }

  /** Each human check reviews the candidate; returns the record when the run ends (no review in time). */
  async function reviews(progress: AttemptProgress, n: number): Promise<RunRecord | undefined> {
    // A check that passed but asks for a person (a change policy with testChanges: human) adds a review.
    const asked = progress.verdicts.filter((v) => v.humanReview).map((v) => ({ kind: 'human' as const, name: 'test changes', approvers: [] as string[], why: v.humanReview! }));
    const humans = [...input.spec.checks.flatMap((c) => (c.kind === 'human' ? [{ ...c, why: undefined as string | undefined }] : [])), ...asked.slice(0, 1)];
    for (const check of humans) {
      record.pendingReview = { attempt: n, candidate: progress.candidate!, verdicts: [...progress.verdicts] };
      const who = check.approvers.length ? ` (${check.approvers.join(', ')})` : '';
      const decision = await escalate('review', 'review_timeout', `attempt ${n} passed its automated checks and waits for review ${check.name}${who}${check.why ? `: ${check.why}` : ''}`, check.approvers);
      record.pendingReview = null;
      if (!decision) {
        metrics.verdicts(recordAttempt(record, { n, candidate: progress.candidate, usage: attemptUsage, verdicts: progress.verdicts }).verdicts);
        return finish('blocked', 'review_timeout');
      }
      const approved = decision.kind === 'approve';
      const why = decision.kind === 'reject' ? decision.reason : decision.kind === 'approve' ? decision.note : undefined;
      const verdict: Verdict = {
        check: check.name,
        kind: 'human',
        passed: approved,
        reason: approved ? `approved by ${decision.by}` : `rejected by ${decision.by}${why ? `: ${why}` : ''}`,
        failedItems: approved ? [] : [check.name],
        requiredCorrection: approved ? '' : (why ?? 'the reviewer rejected it'),
        evidence: why,
        by: decision.by,
        usage: { ...ZERO_USAGE },
      };
      progress.verdicts.push(verdict);
      transition('verifying');
      if (!approved) return undefined;
    }
    return undefined;
  }
}
