import { byline } from '../common/decision';
import type { Budget } from '../common/loop-spec';
import { redact } from '../common/redact';
import { escapeLine } from '../common/terminal';
import type { Trace, TraceCheck, TraceDecision, TraceEffect, TraceModelCall, TraceToolCall } from './types';

/** Candidates, tasks and outputs are cut to this many characters in the text timeline. */
export const TEXT_CUT = 300;

/** `+0.4s`, `+2m03s`, `+1h02m`, `+3d04h`: time since the run started. */
export function formatOffset(ms: number): string {
  const s = Math.round(Math.max(0, ms) / 100) / 10;
  if (s < 60) return `+${s.toFixed(1)}s`;
  const two = (n: number) => String(Math.floor(n)).padStart(2, '0');
  if (s < 3600) return `+${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `+${Math.floor(s / 3600)}h${two((s % 3600) / 60)}m`;
  return `+${Math.floor(s / 86_400)}d${two((s % 86_400) / 3600)}h`;
}

/** One line of text: newlines shown as ⏎, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max = TEXT_CUT): string {
  const flat = text.trim().replace(/\r?\n/g, ' ⏎ ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** `$0.0123`: dollars to four places, as every trace view shows cost. */
export const money = (usd: number): string => `$${usd.toFixed(4)}`;

/** `3 attempts, 20000 tokens, $0.5000, 1h active, 2 effects`: the limits a budget sets. */
export function budgetLimits(b: Budget): string {
  const limits = [
    `${b.maxAttempts} attempt${b.maxAttempts === 1 ? '' : 's'}`,
    b.maxTokens && `${b.maxTokens} tokens`,
    b.maxCostUsd && money(b.maxCostUsd),
    b.maxWallTime && `${b.maxWallTime} active`,
    b.maxSideEffects !== undefined && `${b.maxSideEffects} effects`,
  ];
  return limits.filter(Boolean).join(', ');
}

/**
 * The trace as a timeline, one line per event with its time since the start: attempts with
 * their model calls, tool calls, verdicts and feedback; escalations, decisions, effects and
 * the ending. Long texts are cut to 300 characters; secrets are redacted; every line is made
 * inert with `escapeLine` (the run's text cannot drive the terminal, and a field with a newline,
 * such as a decision's `by`, cannot start a line of its own).
 */
export function renderTrace(trace: Trace): string[] {
  const head = [
    `${trace.workflowId}  ${trace.loop} v${trace.specVersion} ${trace.autonomy}  started ${trace.startedAt.slice(0, 19).replace('T', ' ')} UTC by ${trace.trigger.kind}${trace.trigger.by ? ` (${trace.trigger.by})` : ''}`,
    `  task: ${oneLine(trace.task)}`,
  ];
  head.push(
    `  budget: ${budgetLimits(trace.budget)}  rubric ${trace.rubricHash.slice(0, 19)}…${trace.harnessVersion ? `  harness v${trace.harnessVersion}` : ''}${trace.itemKey ? `  item ${trace.itemKey}` : ''}${trace.runs > 1 ? `  (${trace.runs} runs, continued as new)` : ''}`,
  );
  if (trace.sandbox)
    head.push(
      `  sandbox: ${trace.sandbox}${trace.sandbox === 'none' ? ' (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)' : ''}`,
    );

  const rows: Array<{ ms: number; text: string }> = [];
  const at = (offsetMs: number, indent: number, text: string) =>
    rows.push({ ms: offsetMs, text: `${`${formatOffset(offsetMs)} `.padEnd(8)}${' '.repeat(indent)}${text}` });
  for (const a of trace.attempts) {
    at(a.offsetMs, 0, `attempt ${a.n}`);
    const inner: Array<{ ms: number; text: string }> = [
      ...a.modelCalls.map((c) => ({ ms: c.offsetMs, text: modelLine(c) })),
      ...a.toolCalls.map((c) => ({ ms: c.offsetMs, text: toolLine(c) })),
      ...a.checks.flatMap((c) => checkLines(c).map((text) => ({ ms: c.offsetMs, text }))),
    ].sort((x, y) => x.ms - y.ms);
    const answered = a.modelCalls.filter((c) => c.error === null && c.toolCalls.length === 0).at(-1);
    if (a.candidate !== null) {
      const ms = answered ? answered.offsetMs + (answered.durationMs ?? 0) : a.offsetMs;
      const i = inner.findIndex((r) => r.ms > ms);
      inner.splice(i < 0 ? inner.length : i, 0, { ms, text: `candidate: ${oneLine(a.candidate) || '(empty)'}` });
    }
    for (const r of inner) at(r.ms, 2, r.text);
    if (a.stopped) at(inner.at(-1)?.ms ?? a.offsetMs, 2, `stopped (${a.stopped.reason}): ${oneLine(a.stopped.detail)}`);
    if (a.feedback)
      at(
        a.feedback.offsetMs,
        2,
        `feedback to attempt ${a.feedback.toAttempt}: ${oneLine(a.feedback.reasons.join(' | '))}`,
      );
  }
  for (const e of trace.escalations) {
    at(e.offsetMs, 0, `awaiting_human (${e.kind ?? 'unknown'}): ${oneLine(e.reason)}`);
    if (e.outcome === 'timed_out' && e.endedAt)
      at(Date.parse(e.endedAt) - Date.parse(trace.startedAt), 0, 'no decision by the deadline');
  }
  for (const d of trace.decisions) at(d.offsetMs, 0, decisionLine(d));
  for (const e of trace.effects) at(e.offsetMs, 0, effectLine(e));
  const o = trace.outcome;
  const tokens = trace.usage.inputTokens + trace.usage.outputTokens;
  if (o) {
    const what = o.state ? `${o.state}${o.stopReason ? ` (${o.stopReason})` : ''}` : o.status;
    at(
      o.offsetMs,
      0,
      `${what}${o.override ? ' — human override' : ''}  ${tokens} tokens ${money(trace.usage.costUsd)}${o.error ? `  error: ${oneLine(o.error)}` : ''}`,
    );
    if (o.output !== null) at(o.offsetMs, 2, `output: ${oneLine(o.output)}`);
  } else {
    at(
      rows.reduce((m, r) => Math.max(m, r.ms), 0),
      0,
      `still running  ${tokens} tokens ${money(trace.usage.costUsd)} so far`,
    );
  }
  // Stable sort: events at the same moment keep the order they were added in.
  const body = rows
    .map((r, i) => ({ ...r, i }))
    .sort((x, y) => x.ms - y.ms || x.i - y.i)
    .map((r) => `  ${r.text}`);
  return [...head, ...body].map((line) => escapeLine(redact(line)));
}

function modelLine(c: TraceModelCall): string {
  const what =
    c.activity === 'modelTurn'
      ? `${c.model}: turn ${c.turn} (attempt ${c.attempt})`
      : `${c.model}: worker (attempt ${c.attempt})`;
  const tryNo = c.try > 1 ? `, try ${c.try}` : '';
  const cost = c.usage ? `  ${c.tokens} tokens ${money(c.usage.costUsd)}` : '';
  const tools = c.toolCalls.length ? `  → ${c.toolCalls.join(', ')}` : '';
  return `${what}${tryNo}${cost}${c.error ? `  FAILED ${oneLine(c.error, 200)}` : tools}`;
}

function toolLine(c: TraceToolCall): string {
  const call = `tool ${c.name}${c.summary ? ` ${c.summary}` : ''}`;
  if (!c.allowed) return `${call}  DENIED${c.deniedReason ? ` ${c.deniedReason}` : ''}`;
  if (c.error) return `${call}  FAILED ${oneLine(c.error, 200)}`;
  if (c.preview === null) return `${call}  (running)`;
  return `${call}  ${c.isError ? 'error' : 'ok'}${c.sandbox ? ` [sandbox ${c.sandbox}]` : ''}${c.preview.trim() ? `: ${oneLine(c.preview, 80)}` : ''}`;
}

function checkLines(c: TraceCheck): string[] {
  const name = `check ${c.check} (${c.kind})${c.by ? ` by ${c.by}` : ''}`;
  const cost = `${c.usage ? `  ${c.usage.inputTokens + c.usage.outputTokens} tokens ${money(c.usage.costUsd)}` : ''}${c.sandbox ? `  [sandbox ${c.sandbox}]` : ''}`;
  if (c.error) return [`${name}: ERROR ${oneLine(c.error, 200)}`];
  if (c.passed === null) return [`${name}: (running)`];
  if (c.passed) return [`${name}: pass${cost}`];
  const items = c.failedItems.length ? `${c.failedItems.join(', ')} — ` : '';
  const lines = [`${name}: FAIL ${items}${oneLine(c.reason)}${cost}`];
  if (c.evidence) lines.push(`  evidence: ${oneLine(c.evidence)}`);
  return lines;
}

/** What a decision carried, one phrase each: `guidance "…"`, `+1 attempt`, `note "…"`. */
export function decisionDetails(d: TraceDecision): string[] {
  return [
    d.guidance && `guidance "${oneLine(d.guidance)}"`,
    d.attempts && `+${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`,
    d.tokens && `+${d.tokens} tokens`,
    d.costUsd && `+${money(d.costUsd)}`,
    d.wallTime && `+${d.wallTime}`,
    d.verdict && `verdict ${d.verdict}`,
    d.note && `note "${oneLine(d.note)}"`,
    d.reason && `reason "${oneLine(d.reason)}"`,
  ].filter((x): x is string => Boolean(x));
}

function decisionLine(d: TraceDecision): string {
  const extras = decisionDetails(d);
  const status =
    d.status === 'refused' ? `  REFUSED: ${d.refusal ?? 'no reason given'}` : d.override ? '  (human override)' : '';
  return `decision ${d.kind} by ${d.by}${d.status === 'refused' ? '' : byline(d)}${extras.length ? `: ${extras.join(', ')}` : ''}${status}`;
}

function effectLine(e: TraceEffect): string {
  const label = e.kind === 'report' ? 'report' : 'commit';
  if (e.error) return `effect ${label} ${e.key} FAILED ${oneLine(e.error, 200)}`;
  const where =
    e.kind === 'report' ? `${e.path ?? e.target ?? '?'}` : `${e.commit?.slice(0, 12) ?? '?'} on ${e.target ?? '?'}`;
  return `effect ${label} ${e.key} → ${where}${e.alreadyApplied ? ' (already applied)' : ''}`;
}
