import { byline } from '../common/decision';
import { redactDeep } from '../common/redact';
import { escapeBlock } from '../common/terminal';
import { budgetLimits, decisionDetails, formatOffset, money, oneLine } from './render-trace';
import type {
  Trace,
  TraceAttempt,
  TraceCheck,
  TraceDecision,
  TraceEffect,
  TraceEscalation,
  TraceModelCall,
  TraceToolCall,
} from './types';

/** Candidates, outputs and tasks are cut to this many characters in a report's blocks. */
export const BLOCK_CUT = 2000;

/**
 * The trace as a self-contained Markdown report for a PR, a wiki or the reports folder: a
 * summary table, the task, one section per attempt (model calls, tool calls, verdicts,
 * feedback), escalations and decisions, effects and the outcome; empty sections are left out.
 * Deterministic (same trace, same bytes: only the trace's own times are shown). Secrets are
 * redacted, table cells escaped, and every fenced block is fenced longer than any backtick run
 * in it, so no candidate's text can break out of its block. The report is inert when printed or
 * `cat`: every control, separator and bidi character but newline and tab is written as a
 * visible escape (`escapeBlock`: `\x1b`, `\r`, `\u202e`), and single-line fields are kept to
 * one line, so a field cannot start a line (a heading, a list item) of its own.
 */
export function renderTraceMarkdown(input: Trace): string {
  const trace = redactDeep(input);
  const o = trace.outcome;
  const tokens = trace.usage.inputTokens + trace.usage.outputTokens;
  // The budget is pinned before any human extension; retries and extensions grant more attempts.
  const granted = trace.decisions.reduce(
    (n, d) => n + (d.status === 'applied' && (d.kind === 'retry' || d.kind === 'extend') ? (d.attempts ?? 0) : 0),
    0,
  );
  const state = o
    ? `${o.state ?? o.status}${o.stopReason ? ` (${o.stopReason})` : ''}${o.override ? ' — human override' : ''}`
    : 'still running';
  const summary: Array<[string, string | null]> = [
    ['Loop', `${trace.loop} v${trace.specVersion}`],
    ['Autonomy', trace.autonomy],
    ['Trigger', `${trace.trigger.kind}${trace.trigger.by ? ` by ${trace.trigger.by}` : ''}`],
    ['Item', trace.itemKey && code(trace.itemKey)],
    ['Started', `${trace.startedAt}${trace.runs > 1 ? ` (${trace.runs} runs, continued as new)` : ''}`],
    ['Outcome', state],
    [
      'Attempts',
      `${trace.attempts.length} of ${trace.budget.maxAttempts + granted} (budget: ${budgetLimits(trace.budget)}${granted ? `, +${granted} granted by decisions` : ''})`,
    ],
    ['Tokens', String(tokens)],
    ['Cost', money(trace.usage.costUsd)],
    ['Rubric', code(trace.rubricHash)],
    ['Harness', trace.harnessVersion ? `v${trace.harnessVersion}${trace.evaluation ? ' (evaluation run)' : ''}` : null],
    [
      'Sandbox',
      trace.sandbox &&
        (trace.sandbox === 'none' ? 'none (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)' : trace.sandbox),
    ],
  ];
  const out: string[] = [
    `# ${inline(trace.loop, 80)}: ${inline(trace.itemKey ?? trace.task, 80)}`,
    '',
    ...table(
      ['Run', code(trace.workflowId)],
      summary.filter((r): r is [string, string] => r[1] !== null).map(([k, v]) => [`**${k}**`, v]),
    ),
    '',
    '## Task',
    '',
    ...quote(trace.task),
  ];
  for (const a of trace.attempts) out.push('', ...attemptSection(a));
  if (trace.escalations.length || trace.decisions.length) {
    out.push('', '## Escalations and decisions');
    if (trace.escalations.length)
      out.push('', ...table(['When', 'Kind', 'Reason', 'Deadline', 'Ended'], trace.escalations.map(escalationRow)));
    if (trace.decisions.length)
      out.push('', ...table(['When', 'Decision', 'By', 'Details', 'Status'], trace.decisions.map(decisionRow)));
  }
  if (trace.effects.length)
    out.push('', '## Effects', '', ...table(['Name', 'Kind', 'Key', 'Target', 'Result'], trace.effects.map(effectRow)));
  if (o) {
    out.push(
      '',
      '## Outcome',
      '',
      `- **State:** ${o.state ?? `${o.status} (no run record)`}`,
      `- **Stop reason:** ${o.stopReason ?? 'none'}`,
    );
    if (o.override) out.push('- **Human override:** a person accepted a candidate that did not pass its checks');
    if (o.error) out.push(`- **Error:** ${inline(o.error)}`);
    if (o.output !== null) out.push('', '**Output**', '', ...fenced(o.output));
  } else {
    out.push(
      '',
      '## Outcome',
      '',
      `Still running at ${formatOffset(lastOffset(trace))}: ${tokens} tokens, ${money(trace.usage.costUsd)} so far.`,
    );
  }
  return escapeBlock(`${out.join('\n')}\n`);
}

function attemptSection(a: TraceAttempt): string[] {
  const verdict = a.passed === null ? 'no verdict' : a.passed ? '✅ passed' : '❌ failed';
  const out = [`## Attempt ${a.n}`, '', `Started ${formatOffset(a.offsetMs)} — ${verdict}.`];
  if (a.modelCalls.length)
    out.push(
      '',
      '**Model calls**',
      '',
      ...table(['Turn', 'Model', 'Tokens', 'Cost', 'Result'], a.modelCalls.map(modelRow)),
    );
  if (a.toolCalls.length)
    out.push('', '**Tool calls**', '', ...table(['Turn', 'Tool', 'Summary', 'Gate'], a.toolCalls.map(toolRow)));
  if (a.candidate !== null) out.push('', '**Candidate**', '', ...fenced(a.candidate));
  if (a.checks.length) out.push('', '**Checks**', '', ...a.checks.flatMap(checkItem));
  if (a.stopped) out.push('', `**Stopped early (${a.stopped.reason}):** ${inline(a.stopped.detail)}`);
  if (a.feedback) {
    out.push('', `**Feedback to attempt ${a.feedback.toAttempt}**`, '');
    out.push(
      ...a.feedback.reasons.map((r) => `- ${inline(r)}`),
      ...a.feedback.corrections.map((c) => `- correction: ${inline(c)}`),
    );
  }
  return out;
}

function modelRow(c: TraceModelCall): string[] {
  const turn = `${c.turn ?? 'worker'}${c.try > 1 ? ` (try ${c.try})` : ''}`;
  const result = c.error
    ? `error: ${inline(c.error, 200)}`
    : c.toolCalls.length
      ? `→ ${c.toolCalls.join(', ')}`
      : c.durationMs === null
        ? 'running'
        : 'ok';
  return [turn, c.model, c.usage ? String(c.tokens) : '—', c.usage ? money(c.usage.costUsd) : '—', result];
}

function toolRow(c: TraceToolCall): string[] {
  const ran = c.sandbox ? ` (sandbox ${c.sandbox})` : '';
  const gate = !c.allowed
    ? `denied: ${inline(c.deniedReason ?? 'no reason recorded')}`
    : c.error
      ? `allowed, failed: ${inline(c.error, 200)}`
      : c.isError
        ? `allowed, tool error${ran}`
        : `allowed${ran}`;
  return [String(c.turn), c.name, c.summary ? code(c.summary) : '', gate];
}

function checkItem(c: TraceCheck): string[] {
  const head = `**${inline(c.check, 80)}** (${c.kind}${c.by ? `, by ${inline(c.by, 80)}` : ''})`;
  const cost = `${c.usage ? ` · ${c.usage.inputTokens + c.usage.outputTokens} tokens, ${money(c.usage.costUsd)}` : ''}${c.sandbox ? ` · sandbox ${c.sandbox}` : ''}`;
  if (c.error) return [`- ⚠️ ${head}: error: ${inline(c.error, 200)}`];
  if (c.passed === null) return [`- ⏳ ${head}: running`];
  const lines = [`- ${c.passed ? '✅' : '❌'} ${head}${c.reason ? `: ${inline(c.reason)}` : ''}${cost}`];
  if (c.failedItems.length) lines.push(`  - failed: ${c.failedItems.map((i) => inline(i, 120)).join('; ')}`);
  if (c.requiredCorrection) lines.push(`  - required correction: ${inline(c.requiredCorrection)}`);
  if (c.evidence) lines.push(`  - evidence: ${code(inline(c.evidence, 200))}`);
  return lines;
}

function escalationRow(e: TraceEscalation): string[] {
  const ended =
    e.outcome === 'open' ? 'open' : `${e.outcome === 'decided' ? 'decided' : 'timed out'} at ${e.endedAt ?? '?'}`;
  return [formatOffset(e.offsetMs), e.kind ?? 'unknown', inline(e.reason), e.deadline ?? '—', ended];
}

function decisionRow(d: TraceDecision): string[] {
  const status =
    d.status === 'refused'
      ? `refused: ${inline(d.refusal ?? 'no reason given')}`
      : d.status === 'applied'
        ? d.override
          ? 'applied — human override'
          : 'applied'
        : 'pending';
  return [
    formatOffset(d.offsetMs),
    d.kind,
    `${d.by}${d.status === 'refused' ? '' : byline(d)}`,
    decisionDetails(d).join(', '),
    status,
  ];
}

function effectRow(e: TraceEffect): string[] {
  const done = e.kind === 'report' ? (e.path ?? 'written') : `commit ${e.commit?.slice(0, 12) ?? '?'}`;
  const result = e.error ? `failed: ${inline(e.error, 200)}` : `${done}${e.alreadyApplied ? ' (already applied)' : ''}`;
  return [e.name, e.kind, code(e.key), e.target ?? '—', result];
}

/** One line, cut; a lone `\r` is a line ending in Markdown too, so it is flattened as well. */
function inline(text: string, max?: number): string {
  return oneLine(text.replace(/\r(?!\n)/g, '\n'), max);
}

/** A GFM table; cells are kept to one line and their pipes escaped (also in code spans, as GFM requires). */
function table(header: string[], rows: string[][]): string[] {
  const row = (cells: string[]) =>
    `| ${cells.map((c) => c.replace(/\r\n|\r|\n/g, ' ').replace(/\|/g, '\\|')).join(' | ')} |`;
  return [row(header), `|${header.map(() => '---|').join('')}`, ...rows.map(row)];
}

/** A code span whose delimiter is longer than any backtick run inside it. */
function code(text: string): string {
  const tick = '`'.repeat(longestRun(text) + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${tick}${pad}${text}${pad}${tick}`;
}

/** A fenced block, cut to BLOCK_CUT characters, fenced longer than any backtick run in it. */
function fenced(text: string): string[] {
  const fence = '`'.repeat(Math.max(3, longestRun(text) + 1));
  return [fence, ...cut(text).split(/\r\n|\r|\n/), fence];
}

function quote(text: string): string[] {
  return cut(text.trim())
    .split(/\r\n|\r|\n/)
    .map((l) => (l ? `> ${l}` : '>'));
}

function cut(text: string): string {
  return text.length > BLOCK_CUT ? `${text.slice(0, BLOCK_CUT)}\n… (${text.length - BLOCK_CUT} more characters)` : text;
}

function longestRun(text: string): number {
  return Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
}

function lastOffset(trace: Trace): number {
  const times = [
    ...trace.attempts.flatMap((a) => [a, ...a.modelCalls, ...a.toolCalls, ...a.checks]),
    ...trace.escalations,
    ...trace.decisions,
    ...trace.effects,
  ];
  return times.reduce((m, t) => Math.max(m, t.offsetMs), 0);
}
