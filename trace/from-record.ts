import type { ToolCallRef } from '../common/agent';
import type { RunRecord, Verdict } from '../common/run-record';
import type { Trace, TraceAttempt, TraceCheck, TraceTime, TraceToolCall } from './types';

/** The tool calls one model turn asked for (from its result), and when it answered. */
export interface TurnCalls {
  attempt: number;
  turn: number;
  ms: number;
  refs: ToolCallRef[];
}

/**
 * Completes a trace built from activity events with what only the workflow knew and the run
 * record kept: tool calls the autonomy gate denied (no activity ran), verdicts given without
 * an activity (human reviews, empty answers, step caps), a judge verdict the run did not count
 * (rubric mismatch), what became of each decision, and the feedback between attempts.
 * `record` is absent while the run is going: then only the history's part is there.
 */
export function completeFromRecord(
  trace: Trace,
  record: RunRecord | undefined,
  turns: TurnCalls[],
  tools: Map<string, TraceToolCall>,
  time: (ms: number) => TraceTime,
): void {
  const byN = new Map(trace.attempts.map((a) => [a.n, a]));
  const recorded = new Map((record?.attempts ?? []).map((a) => [a.n, a]));

  // Tool calls in the order the model made them, the denied ones included.
  const placed = new Set<TraceToolCall>();
  for (const t of turns) {
    const a = byN.get(t.attempt);
    if (!a) continue;
    const denials = (recorded.get(t.attempt)?.toolCalls ?? []).filter((c) => c.turn === t.turn && !c.allowed);
    for (const ref of t.refs) {
      const call = tools.get(`${t.attempt}/${t.turn}/${ref.id}`);
      if (call) {
        call.summary = ref.summary;
        a.toolCalls.push(call);
        placed.add(call);
        continue;
      }
      const i = denials.findIndex((d) => d.name === ref.name);
      const denial = i >= 0 ? denials.splice(i, 1)[0] : undefined;
      a.toolCalls.push({
        ...time(t.ms),
        attempt: t.attempt,
        turn: t.turn,
        name: ref.name,
        summary: ref.summary,
        allowed: false,
        deniedReason: denial?.reason ?? null,
        isError: true,
        preview: null,
        bytes: null,
        error: null,
        sandbox: null,
      });
    }
  }
  for (const call of tools.values()) if (!placed.has(call)) byN.get(call.attempt)?.toolCalls.push(call);

  for (const a of trace.attempts) {
    const r = recorded.get(a.n);
    if (r) {
      a.passed = r.passed;
      a.stopped = r.stopped ?? null;
      a.candidate ??= r.candidate;
      reconcileVerdicts(a, r.verdicts, trace, time);
    } else if (a.checks.length > 0 && a.checks.every((c) => c.passed !== null)) {
      a.passed = a.checks.every((c) => c.passed);
    }
  }

  for (const d of trace.decisions) {
    const entry = record?.decisions.find((e) => e.id === d.id);
    if (!entry) continue;
    d.status = entry.status;
    d.refusal = entry.status === 'refused' ? (entry.reason ?? null) : null;
    if (entry.status === 'applied') {
      d.verified = entry.verified === true;
      d.fingerprint = entry.fingerprint ?? null;
      d.by = entry.by;
    }
    d.override =
      d.kind === 'approve' && entry.status === 'applied' && record!.override && record!.decision?.id === d.id;
  }

  for (const e of trace.effects) {
    const r = record?.effects.find((x) => x.key === e.key);
    if (r) Object.assign(e, { name: r.name, kind: r.kind, target: r.target || e.target });
  }

  for (const a of trace.attempts) {
    const failed = a.checks.filter((c) => c.passed === false);
    if (a.passed !== false || a.candidate === null || failed.length === 0 || !byN.has(a.n + 1)) continue;
    const at = Math.max(...a.checks.map((c) => Date.parse(c.at)));
    a.feedback = {
      ...time(at),
      toAttempt: a.n + 1,
      reasons: failed.map((c) => c.reason),
      corrections: failed.map((c) => c.requiredCorrection).filter(Boolean),
    };
  }
}

/** Brings in the verdicts the record has and the history does not show (or shows otherwise). */
function reconcileVerdicts(a: TraceAttempt, verdicts: Verdict[], trace: Trace, time: (ms: number) => TraceTime): void {
  const used = new Set<TraceCheck>();
  const lastMs = Math.max(
    Date.parse(a.at),
    ...a.modelCalls.map((c) => Date.parse(c.at) + (c.durationMs ?? 0)),
    ...a.checks.map((c) => Date.parse(c.at)),
  );
  for (const v of verdicts) {
    const seen = a.checks.find((c) => !used.has(c) && c.check === v.check && c.passed !== null);
    if (seen) {
      used.add(seen);
      if (seen.passed !== v.passed) Object.assign(seen, { passed: v.passed, reason: v.reason });
      continue;
    }
    // A human review's verdict is given by a decision; other synthetic ones end the attempt.
    const decision =
      v.kind === 'human'
        ? trace.decisions.find(
            (d) =>
              d.by === v.by && (d.kind === 'approve' || d.kind === 'reject') && Date.parse(d.at) >= Date.parse(a.at),
          )
        : undefined;
    const check: TraceCheck = {
      ...(decision ? time(Date.parse(decision.at)) : time(lastMs)),
      attempt: a.n,
      check: v.check,
      kind: v.kind,
      passed: v.passed,
      reason: v.reason,
      failedItems: v.failedItems,
      requiredCorrection: v.requiredCorrection,
      evidence: v.evidence ?? null,
      by: v.by ?? null,
      usage: null,
      error: null,
      sandbox: v.sandbox ?? null,
    };
    used.add(check);
    a.checks.push(check);
  }
}
