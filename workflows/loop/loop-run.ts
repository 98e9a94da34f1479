import type { SessionSetup } from '../../common/agent';
import {
  attemptStop,
  describeStop,
  extendLimits,
  extensionOf,
  limitsIn,
  setLimits,
  type BudgetLimits,
  type BudgetStop,
  type BudgetUse,
} from '../../common/budget';
import type { AppliedDecision, Decision } from '../../common/decision';
import { parseDuration } from '../../common/duration';
import type { LoopInput } from '../../common/loop-input';
import type { FeedbackEntry } from '../../common/prompts';
import { forDisplay, type Redaction } from '../../common/redact';
import type { AttemptRecord, Escalation, RunRecord, RunState, StopReason, Verdict } from '../../common/run-record';
import type { Trust } from '../../common/trust';
import { ZERO_USAGE, addUsage, type Usage } from '../../common/usage';
import { HUMAN_WAIT_MAX_CHARS, humanWaitSummary } from '../../common/activity-summary';
import type { RunIdentity } from '../../common/run-presentation';
import { ActiveClock } from './active-clock';
import { runDetails } from './details';
import { chargeUsage, newRecord, recordAttempt } from './record-keeping';
import type { ResumeState } from './resume';

export type { RunIdentity };

/** What a run needs of Temporal; `temporalHost()` (run-host.ts) in the workflow, a fake in unit tests. */
export interface RunHost {
  /** Workflow time (replayed identically). */
  now(): number;
  /** Shows the record: its search attributes and the Web UI's current details; with `identity`, those too, in the same upsert. */
  show(record: RunRecord, details: string, identity?: RunIdentity): void;
  /** Waits until `ready()` or `ms` pass; false when the time ran out. */
  wait(ready: () => boolean, ms: number, summary: string): Promise<boolean>;
  /** True when Temporal suggests continuing as new (the history grew long). */
  continueAsNewSuggested(): boolean;
  /**
   * Whether this run takes the code of `change`, one made to the loop's commands after runs had
   * started: Temporal's `patched()`, except for the changes `loopWorkflowV2` was born with
   * (run-host.ts). Guard every change to what a running loop does with it.
   */
  has(change: string): boolean;
}

/** What a run reports to the worker's metrics (see metrics.ts). */
export interface RunMetrics {
  charged(role: 'worker' | 'checker', usage: Usage): void;
  verdicts(vs: Verdict[]): void;
  waited(kind: Escalation['kind'], ms: number, decided: boolean): void;
  ended(record: RunRecord): void;
}

/**
 * One verified run's state and its moves: the record (which holds the budget's limits and use),
 * the active clock, the feedback, the attempt's usage and the decision a person sent. The
 * workflow wires Temporal's handlers to it and runs the loop; attempts and delivery act on it.
 * Deterministic: time comes from the host, and each method issues its commands in one order.
 */
export class LoopRun {
  readonly record: RunRecord;
  readonly clock: ActiveClock;
  readonly feedback: FeedbackEntry[];
  /** What the run keeps out of search attributes and the Web UI. */
  readonly secrets: Redaction;
  /** What the run trusts (allowed signers, signed decisions, its autonomy grant), pinned at start. */
  trust: Trust | undefined;
  /** The agent's workspace and tools, once set up (loops whose agent has tools). */
  session: SessionSetup | undefined;
  /** The usage of the attempt in progress. */
  attemptUsage: Usage;
  private pending: Decision | undefined;
  private readonly escalationMs: number;

  constructor(
    readonly input: LoopInput,
    readonly workflowId: string,
    private readonly host: RunHost,
    private readonly metrics: RunMetrics,
    resume?: ResumeState,
  ) {
    this.record = resume?.record ?? newRecord(workflowId, input, new Date(host.now()).toISOString());
    this.clock = new ActiveClock(host.now(), resume?.activeMs ?? 0);
    this.feedback = resume?.feedback ?? [];
    this.trust = resume?.trust;
    this.attemptUsage = resume?.inFlight?.attemptUsage ?? { ...ZERO_USAGE };
    this.secrets = { names: input.redact ?? [] };
    this.escalationMs = parseDuration(input.spec.escalation.timeout) ?? 86_400_000;
  }

  /** The limits the run obeys now (the record holds them). */
  limits(): BudgetLimits {
    return limitsIn(this.record.budget);
  }

  /** What the run has used, its active time up to now. */
  used(): BudgetUse {
    return {
      ...this.record.budget.used,
      attempts: this.record.attempts.length,
      wallTimeMs: this.clock.used(this.host.now()),
    };
  }

  /** The spent budget that stops the next attempt from starting, or null. */
  spent(): BudgetStop | null {
    return attemptStop(this.limits(), this.used());
  }

  describe(stop: BudgetStop): string {
    return describeStop(stop, this.limits(), this.used());
  }

  /** Charges one model call's usage to the run, per role, in total and to the attempt. */
  charge(role: 'worker' | 'checker', usage: Usage): void {
    chargeUsage(this.record, role, usage);
    this.metrics.charged(role, usage);
    this.attemptUsage = addUsage(this.attemptUsage, usage);
  }

  /** Adds a finished (or stopped) attempt to the record and its verdicts to the metrics. */
  recordAttempt(attempt: Parameters<typeof recordAttempt>[1]): AttemptRecord {
    const recorded = recordAttempt(this.record, attempt);
    this.metrics.verdicts(recorded.verdicts);
    return recorded;
  }

  /** The record as a query reads it, its active time up to now. */
  snapshot(): RunRecord {
    this.record.budget.used.wallTimeMs = this.clock.used(this.host.now());
    return this.record;
  }

  /** True when Temporal suggests continuing as new. */
  shouldContinueAsNew(): boolean {
    return this.host.continueAsNewSuggested();
  }

  /** What a fresh history needs to go on with this run. */
  resumeState(session: SessionSetup | undefined, inFlight?: ResumeState['inFlight']): ResumeState {
    return {
      record: this.record,
      feedback: this.feedback,
      limits: this.limits(),
      activeMs: this.clock.used(this.host.now()),
      session: session ?? null,
      inFlight,
      ...(this.trust ? { trust: this.trust } : {}),
    };
  }

  /** A decision the gate accepted (see decisions.ts): an audit is recorded, any other waits for `escalate`. */
  receive(entry: AppliedDecision): void {
    if (entry.kind === 'audit') {
      this.record.audit = {
        ...this.record.audit!,
        reviewedBy: entry.by,
        verdict: entry.verdict,
        note: entry.note,
        at: entry.at,
      };
    } else {
      this.pending = entry;
      this.record.decision = entry;
    }
  }

  /** Whether this run takes the code of `change` (see RunHost.has). */
  has(change: string): boolean {
    return this.host.has(change);
  }

  /** True while a decision waits to be taken. */
  hasPending(): boolean {
    return this.pending !== undefined;
  }

  /** Moves the run to `state` and shows it; `identity` is shown with it when given (a run's first state). */
  transition(state: RunState, identity?: RunIdentity): void {
    this.record.state = state;
    this.record.budget.used.wallTimeMs = this.clock.used(this.host.now());
    this.host.show(this.record, forDisplay(runDetails(this.record), this.secrets), identity);
  }

  finish(state: RunState, stopReason: StopReason, output: string | null = null): RunRecord {
    const { record } = this;
    this.clock.pause(this.host.now());
    record.stopReason = stopReason;
    record.output = output;
    record.ok = state === 'completed';
    record.endedAt = new Date(this.host.now()).toISOString();
    this.transition(state);
    this.metrics.ended(record);
    return record;
  }

  /** Waits in awaiting_human (the active clock paused) for one decision or the deadline. */
  async escalate(
    kind: Escalation['kind'],
    stopReason: StopReason,
    reason: string,
    approvers: string[] = this.input.spec.escalation.approvers,
  ): Promise<Decision | undefined> {
    const { record } = this;
    const now = this.host.now();
    this.clock.pause(now);
    record.stopReason = stopReason;
    record.escalation = {
      kind,
      stopReason,
      reason,
      since: new Date(now).toISOString(),
      deadline: new Date(now + this.escalationMs).toISOString(),
      timedOut: false,
      approvers,
    };
    this.transition('awaiting_human');
    if (this.input.evaluation) {
      // An evaluation's child run asks nobody: the escalation is its verdict.
      record.escalation.timedOut = true;
      this.clock.resume(now);
      return undefined;
    }
    const decided = await this.host.wait(
      () => this.pending !== undefined,
      this.escalationMs,
      forDisplay(humanWaitSummary(reason), this.secrets).slice(0, HUMAN_WAIT_MAX_CHARS),
    );
    if (!decided) record.escalation.timedOut = true;
    const decision = this.pending;
    this.pending = undefined;
    this.metrics.waited(kind, this.host.now() - now, decided);
    this.clock.resume(this.host.now());
    return decision;
  }

  /** Applies a decision on a budget or error escalation; returns the record when the run ends. */
  decide(decision: Decision | undefined, kind: 'budget' | 'error', stopReason: StopReason): RunRecord | undefined {
    const { record } = this;
    if (!decision)
      return kind === 'budget' ? this.finish('budget_exhausted', stopReason) : this.finish('blocked', stopReason);
    const at = new Date(this.host.now()).toISOString();
    // An unsigned decision's name is only what its sender claimed: the extension says so.
    const unverified = (decision as { verified?: boolean }).verified === false ? { verified: false as const } : {};
    switch (decision.kind) {
      case 'approve': {
        record.override = true;
        const last = [...record.attempts].reverse().find((a) => a.candidate !== null);
        return this.finish('completed', 'approved', last?.candidate ?? null);
      }
      case 'reject':
        return this.finish('rejected', 'rejected');
      case 'retry':
        setLimits(record.budget, {
          ...this.limits(),
          maxAttempts: Math.max(record.budget.maxAttempts, record.attempts.length) + decision.attempts,
        });
        this.feedback.push({ kind: 'human', by: decision.by, guidance: decision.guidance });
        record.budget.extensions.push({
          by: decision.by,
          at,
          attempts: decision.attempts,
          guidance: decision.guidance,
          ...unverified,
        });
        break;
      case 'extend':
        setLimits(record.budget, extendLimits(this.limits(), extensionOf(decision)));
        record.budget.extensions.push({
          by: decision.by,
          at,
          attempts: decision.attempts,
          tokens: decision.tokens,
          costUsd: decision.costUsd,
          wallTime: decision.wallTime,
          ...unverified,
        });
        break;
    }
    return undefined;
  }
}
