import type { ToolCallRef, TurnResult } from '../common/agent';
import type { DecisionInput } from '../common/decision';
import { LoopwrightError } from '../common/errors';
import type { LoopInput } from '../common/loop-input';
import type { CheckKind, RunRecord, Verdict } from '../common/run-record';
import { addUsage, type Usage } from '../common/usage';
import { redactDeep, type Redaction } from '../common/redact';
import { parseToolCallSummary, parseWaitSummary } from '../common/activity-summary';
import {
  activityFailure,
  decode,
  durationMs,
  eventMs,
  failureMessage,
  failureUsage,
  scheduledIdOf,
  summaryOf,
  type History,
  type HistoryEvent,
} from './history';
import { completeFromRecord, type TurnCalls } from './from-record';
import { guessKind, outcomeOf, outcomeOfRecord } from './outcome';
import type {
  Trace,
  TraceAttempt,
  TraceCheck,
  TraceEffect,
  TraceEscalation,
  TraceModelCall,
  TraceTime,
  TraceToolCall,
} from './types';

type Pending =
  | { kind: 'model'; call: TraceModelCall; startMs: number }
  | { kind: 'check'; check: TraceCheck }
  | { kind: 'tool'; call: TraceToolCall }
  | { kind: 'effect'; effect: TraceEffect; dir?: string }
  /** The activities that say which sandbox the run's commands get. */
  | { kind: 'sandbox' };

/**
 * The story of a run from its histories (each run of its continue-as-new chain, oldest first).
 * Pure: it reads the events and their payloads and nothing else, so it works on runs that
 * ended long ago and on recorded histories. Every string in the result is redacted.
 * `ending`: the record a run is about to return, for a trace the run writes of itself as it
 * ends (its history has no close event yet); it stands in for the completion event's result.
 * `redaction`: what the calling process redacts besides the patterns and the run's own names
 * (its secret variables' values, see common/redact.ts).
 */
export function buildTrace(histories: History[], opts: { ending?: RunRecord; redaction?: Redaction } = {}): Trace {
  const start = histories[0]?.events?.[0];
  const started = start?.workflowExecutionStartedEventAttributes;
  const input = decode<LoopInput>(started?.input);
  if (!start || !started || !input)
    throw new LoopwrightError(
      'this history does not start with the start event of a loop run: is it a Loopwright run?',
    );
  const t0 = eventMs(start);
  const time = (ms: number): TraceTime => ({ at: new Date(ms).toISOString(), offsetMs: ms - t0 });

  const last = histories.at(-1)?.events ?? [];
  const record =
    decode<RunRecord>(
      last.find((e) => e.workflowExecutionCompletedEventAttributes)?.workflowExecutionCompletedEventAttributes?.result,
    ) ?? opts.ending;
  const attempts = new Map<number, TraceAttempt>();
  const attempt = (n: number, ms: number): TraceAttempt => {
    let a = attempts.get(n);
    if (!a)
      attempts.set(
        n,
        (a = {
          n,
          ...time(ms),
          candidate: null,
          passed: null,
          modelCalls: [],
          toolCalls: [],
          checks: [],
          stopped: null,
          feedback: null,
        }),
      );
    return a;
  };
  const tries = new Map<string, number>();
  const nextTry = (key: string) => {
    tries.set(key, (tries.get(key) ?? 0) + 1);
    return tries.get(key)!;
  };
  const turns: TurnCalls[] = [];
  const toolsById = new Map<string, TraceToolCall>();
  const escalations: TraceEscalation[] = [];
  const openTimers = new Map<string, TraceEscalation>();
  const trace: Trace = {
    version: 1,
    workflowId: started.workflowId ?? record?.workflowId ?? '',
    runs: histories.length,
    startedAt: new Date(t0).toISOString(),
    loop: input.loop,
    specVersion: input.spec.version,
    autonomy: input.spec.autonomy,
    task: input.task,
    budget: input.spec.budget,
    rubricHash: input.rubricHash,
    harnessVersion: input.harness?.version ?? null,
    evaluation: input.evaluation === true,
    sandbox: record?.sandbox ?? null,
    trigger: { kind: input.trigger?.kind ?? 'client', by: input.trigger?.by ?? null },
    itemKey: input.itemKey ?? null,
    input: input.input ?? null,
    attempts: [],
    escalations,
    decisions: [],
    effects: [],
    outcome: null,
    usage: record?.usage.total ?? {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0,
    },
  };

  histories.forEach((history, r) => {
    const pending = new Map<string, Pending>();
    for (const event of history.events ?? []) {
      const ms = eventMs(event);
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) {
        const p = scheduleOf(
          event,
          scheduled.activityType?.name ?? '',
          decode<Record<string, unknown>>(scheduled.input) ?? {},
          ms,
        );
        if (p) pending.set(String(event.eventId), p);
        continue;
      }
      const id = scheduledIdOf(event);
      const p = id === undefined ? undefined : pending.get(id);
      if (p) {
        closeActivity(p, event, ms);
        continue;
      }
      onOtherEvent(event, ms, r);
    }
  });

  function scheduleOf(
    event: HistoryEvent,
    type: string,
    args: Record<string, unknown>,
    ms: number,
  ): Pending | undefined {
    const n = Number(args.attempt ?? 0);
    if (type === 'generateCandidate' || type === 'modelTurn') {
      const turn = type === 'modelTurn' ? Number(args.turn) : null;
      const call: TraceModelCall = {
        ...time(ms),
        activity: type,
        model: String(args.model ?? ''),
        attempt: n,
        turn,
        try: nextTry(`${type}/${n}/${turn}`),
        durationMs: null,
        usage: null,
        tokens: 0,
        error: null,
        toolCalls: [],
      };
      attempt(n, ms).modelCalls.push(call);
      return { kind: 'model', call, startMs: ms };
    }
    if (type === 'judgeCandidate' || type === 'runCheck') {
      const spec = (args.check ?? {}) as { name?: string; kind?: CheckKind };
      const check: TraceCheck = {
        ...time(ms),
        attempt: n,
        check: spec.name ?? '?',
        kind: spec.kind ?? (type === 'judgeCandidate' ? 'judge' : 'command'),
        passed: null,
        reason: '',
        failedItems: [],
        requiredCorrection: '',
        evidence: null,
        by: null,
        usage: null,
        error: null,
        sandbox: null,
      };
      attempt(n, ms).checks.push(check);
      return { kind: 'check', check };
    }
    if (type === 'runTool') {
      const name = String(args.name ?? '');
      const fromMeta = parseToolCallSummary(summaryOf(event) ?? '', name);
      const call: TraceToolCall = {
        ...time(ms),
        attempt: n,
        turn: Number(args.turn ?? 0),
        name,
        summary: fromMeta,
        allowed: true,
        deniedReason: null,
        isError: false,
        preview: null,
        bytes: null,
        error: null,
        sandbox: null,
      };
      toolsById.set(`${n}/${call.turn}/${String(args.toolUseId)}`, call);
      return { kind: 'tool', call };
    }
    if (type === 'prepareSession' || type === 'checkSandbox') return { kind: 'sandbox' };
    if (type === 'applyEffect' || type === 'writeReport') {
      const key = String(args.key ?? '');
      const effect: TraceEffect = {
        ...time(ms),
        key,
        name: key.split('/').at(-2) ?? key,
        kind: type === 'applyEffect' ? 'git_commit' : 'report',
        target: typeof args.targetBranch === 'string' ? args.targetBranch : null,
        commit: null,
        path: null,
        alreadyApplied: false,
        error: null,
      };
      trace.effects.push(effect);
      return { kind: 'effect', effect, dir: typeof args.dir === 'string' ? args.dir : undefined };
    }
    return undefined;
  }

  function closeActivity(p: Pending, event: HistoryEvent, ms: number): void {
    const result = event.activityTaskCompletedEventAttributes
      ? decode<Record<string, unknown>>(event.activityTaskCompletedEventAttributes.result)
      : undefined;
    const failure = activityFailure(event);
    const error = result ? null : event.activityTaskCanceledEventAttributes ? 'canceled' : failureMessage(failure);
    if (!result && !error) return; // started, not closed
    if (p.kind === 'model') {
      const c = p.call;
      c.durationMs = ms - p.startMs;
      c.error = error;
      c.usage = result ? ((result.usage as Usage | undefined) ?? null) : failureUsage(failure);
      c.tokens = c.usage ? c.usage.inputTokens + c.usage.outputTokens : 0;
      if (!result) return;
      const a = attempt(c.attempt, ms);
      if (c.activity === 'generateCandidate') a.candidate = String(result.candidate ?? '');
      else {
        const turn = result as unknown as TurnResult;
        c.toolCalls = (turn.toolCalls ?? []).map((t: ToolCallRef) => t.name);
        if (turn.toolCalls?.length) turns.push({ attempt: c.attempt, turn: c.turn ?? 0, ms, refs: turn.toolCalls });
        else a.candidate = turn.text;
      }
    } else if (p.kind === 'check') {
      const c = p.check;
      c.error = error;
      if (!result) return;
      const v = result as unknown as Verdict;
      Object.assign(c, {
        passed: v.passed,
        reason: v.reason,
        failedItems: v.failedItems ?? [],
        requiredCorrection: v.requiredCorrection ?? '',
      });
      Object.assign(c, {
        evidence: v.evidence ?? null,
        by: v.by ?? null,
        usage: c.kind === 'judge' ? v.usage : null,
        kind: v.kind ?? c.kind,
        sandbox: v.sandbox ?? null,
      });
    } else if (p.kind === 'tool') {
      p.call.error = error;
      if (result)
        Object.assign(p.call, {
          isError: Boolean(result.isError),
          preview: (result.preview as string) ?? null,
          bytes: (result.bytes as number) ?? null,
          sandbox: (result.sandbox as TraceToolCall['sandbox']) ?? null,
        });
    } else if (p.kind === 'sandbox') {
      // prepareSession returns the session (with `sandbox` when the loop runs commands); checkSandbox the name itself.
      const name = typeof result === 'string' ? result : (result?.sandbox as unknown);
      if (name === 'bwrap' || name === 'none') trace.sandbox = name;
    } else {
      const e = p.effect;
      e.error = error;
      if (!result) return;
      Object.assign(e, {
        commit: (result.commit as string) || null,
        path: (result.path as string) ?? null,
        alreadyApplied: Boolean(result.alreadyApplied),
      });
      e.target = (result.target as string | undefined) ?? p.dir ?? e.target;
    }
  }

  function onOtherEvent(event: HistoryEvent, ms: number, r: number): void {
    const timer = event.timerStartedEventAttributes;
    const wait = timer ? parseWaitSummary(summaryOf(event) ?? '') : undefined;
    if (timer && wait) {
      const reason = wait.kind === 'audit' ? (record?.audit?.reason ?? 'the run needs an audit') : wait.reason;
      const timeout = durationMs(timer.startToFireTimeout);
      const full = record?.escalation?.reason.startsWith(reason) ? record.escalation : undefined;
      const escalation: TraceEscalation = {
        ...time(ms),
        kind: wait.kind === 'audit' ? 'audit' : (full?.kind ?? guessKind(reason)),
        reason: full?.reason ?? reason,
        deadline: timeout === undefined ? null : new Date(ms + timeout).toISOString(),
        outcome: 'open',
        endedAt: null,
      };
      escalations.push(escalation);
      openTimers.set(`${r}/${timer.timerId}`, escalation);
      return;
    }
    const ended = event.timerFiredEventAttributes ?? event.timerCanceledEventAttributes;
    const open = ended ? openTimers.get(`${r}/${ended.timerId}`) : undefined;
    if (open) {
      open.outcome = event.timerFiredEventAttributes ? 'timed_out' : 'decided';
      open.endedAt = new Date(ms).toISOString();
      return;
    }
    const signal = event.workflowExecutionSignaledEventAttributes;
    // A decision came as the `decision` signal, or as the `decide` update the run accepted
    // (the update's validator keeps refused ones out of history).
    const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    const sent = signal?.signalName === 'decision' ? signal.input : update?.name === 'decide' ? update.args : undefined;
    if (sent !== undefined) {
      const d = (decode<DecisionInput>(sent) ?? {}) as Partial<Record<string, unknown>>;
      // What a sender wrote is shown bounded: a 300 KB note must not become a 300 KB trace.
      const str = (k: string) => (typeof d[k] === 'string' ? clip(d[k] as string) : null);
      const num = (k: string) => (typeof d[k] === 'number' ? (d[k] as number) : null);
      trace.decisions.push({
        ...time(ms),
        kind: str('kind') ?? '?',
        id: str('id'),
        by: str('by') ?? '?',
        note: str('note'),
        reason: str('reason'),
        guidance: str('guidance'),
        attempts: num('attempts'),
        tokens: num('tokens'),
        costUsd: num('costUsd'),
        wallTime: str('wallTime'),
        verdict: (str('verdict') as 'ok' | 'bad' | null) ?? null,
        status: null,
        refusal: null,
        override: false,
        verified: typeof d.signature === 'string' ? null : false,
        fingerprint: null,
      });
      return;
    }
    if (r === histories.length - 1) trace.outcome = outcomeOf(event, time(ms), record) ?? trace.outcome;
  }

  if (!trace.outcome && opts.ending?.endedAt)
    trace.outcome = outcomeOfRecord(opts.ending, time(Date.parse(opts.ending.endedAt)));
  trace.attempts = [...attempts.values()].sort((a, b) => a.n - b.n);
  completeFromRecord(trace, record, turns, toolsById, time);
  if (!record)
    trace.usage = addUsage(
      ...trace.attempts
        .flatMap((a) => [...a.modelCalls.map((c) => c.usage), ...a.checks.map((c) => c.usage)])
        .filter((u): u is Usage => u !== null),
    );
  return redactDeep(trace, {
    names: [...(input.redact ?? []), ...(opts.redaction?.names ?? [])],
    values: opts.redaction?.values,
  });
}

/** A sender's text, at most 2,000 characters. */
function clip(text: string): string {
  return text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} characters)` : text;
}
