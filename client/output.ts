import type { TrustRecord } from '../common/trust';
import { byline } from '../common/decision';
import { redactDeep, type Redaction } from '../common/redact';
import type { RunRecord } from '../common/run-record';
import { escapeBlock, escapeLine } from '../common/terminal';
import type { RunSummary } from './types';

/** Where commands write: stdout for results, stderr for progress, injectable for tests. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export const consoleOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

function money(usd: number): string {
  return `$${usd.toFixed(4)}`;
}

/** One progress line: state, attempt, tokens, cost. */
export function progressLine(r: RunRecord): string {
  const tokens = r.usage.total.inputTokens + r.usage.total.outputTokens;
  return `  ${escapeLine(r.state).padEnd(15)} attempt ${r.attempt}/${r.budget.maxAttempts}  ${tokens} tokens  ${money(r.usage.total.costUsd)}`;
}

/**
 * A short human summary of a run record, with every string redacted by `redaction` (the
 * client's, see client/run-redaction.ts; the patterns alone when none is given). The run's data is untrusted: every line is escaped
 * with `escapeLine` (so an id, a `by` or a reason with a newline stays on its line), the lines
 * of the pending candidate and of the output with `escapeBlock` (tabs kept).
 */
export function summarize(record: RunRecord, redaction: Redaction = {}): string[] {
  const r = redactDeep(record, redaction);
  const lines: string[] = [];
  const say = (...text: string[]) => lines.push(...text.map(escapeLine));
  const block = (title: string, text: string) =>
    lines.push(
      `  ${title}`,
      ...escapeBlock(text)
        .split('\n')
        .map((l) => `    ${l}`),
    );
  say(
    `${r.workflowId}`,
    `  loop       ${r.loop} (v${r.specVersion}, ${r.autonomy})`,
    `  state      ${r.state}${r.stopReason ? ` (${r.stopReason})` : ''}${r.override ? ' — human override' : ''}`,
  );
  say(`  attempts   ${r.attempts.length}/${r.budget.maxAttempts}`);
  const b = r.budget;
  const limits = [
    b.maxTokens === null ? null : `tokens ${b.used.tokens}/${b.maxTokens}`,
    b.maxCostUsd === null ? null : `cost ${money(b.used.costUsd)}/${money(b.maxCostUsd)}`,
    b.maxWallTimeMs === null
      ? null
      : `time ${Math.round(b.used.wallTimeMs / 1000)}s/${Math.round(b.maxWallTimeMs / 1000)}s`,
  ].filter((x): x is string => x !== null);
  if (limits.length) say(`  budget     ${limits.join(' · ')}`);
  for (const e of b.extensions) {
    const what = [
      e.attempts && `+${e.attempts} attempts`,
      e.tokens && `+${e.tokens} tokens`,
      e.costUsd && `+${money(e.costUsd)}`,
      e.wallTime && `+${e.wallTime}`,
    ]
      .filter(Boolean)
      .join(', ');
    say(`  extended   ${what} by ${e.by}${e.verified === false ? ' (unverified)' : ''}`);
  }
  for (const a of r.attempts) {
    say(`    #${a.n} ${a.passed ? 'passed' : 'failed'}${a.reasons.length ? `: ${a.reasons.join(' | ')}` : ''}`);
  }
  say(
    `  usage      ${r.usage.total.inputTokens} in / ${r.usage.total.outputTokens} out tokens, ${money(r.usage.total.costUsd)}`,
  );
  if (r.escalation && r.state === 'awaiting_human') {
    say(`  waiting    for a human until ${r.escalation.deadline}: ${r.escalation.reason}`);
    const verbs =
      r.escalation.kind === 'review' || r.escalation.kind === 'approval'
        ? 'approve|reject'
        : 'approve|reject|retry|budget';
    say(
      `             decide with: loopwright ${verbs} ${r.workflowId} --by NAME${r.trust?.allowedSigners ? ' (signed with LOOPWRIGHT_SIGNING_KEY)' : ''}`,
    );
    if (r.pendingReview) block('candidate', r.pendingReview.candidate);
  }
  if (r.decision) say(`  decision   ${r.decision.kind} by ${r.decision.by}${byline(r.decision)}`);
  if (r.trust) say(`  trust      ${trustLine(r.trust)}`);
  for (const e of r.effects) {
    const what = e.kind === 'report' ? `report ${e.path ?? e.target}` : `${e.commit.slice(0, 12)} on ${e.target}`;
    say(`  effect     ${e.name}: ${what}${e.alreadyApplied ? ' (already applied)' : ''} [${e.key}]`);
    if (e.note) say(`             note: ${e.note}`);
  }
  if (r.workspace?.branch) say(`  branch     ${r.workspace.branch}`);
  if (r.sandbox)
    say(`  sandbox    ${r.sandbox === 'none' ? 'none (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)' : r.sandbox}`);
  if (r.error) say(`  error      ${r.error}`);
  if (r.output !== null) block('output', r.output);
  return lines;
}

/** A table of runs for `list`; every cell redacted and escaped with `escapeLine` (an id with a newline stays in its row). */
export function runTable(all: RunSummary[], redaction: Redaction = {}): string[] {
  if (all.length === 0) return ['no runs match'];
  const rows = redactDeep(all, redaction);
  const header = ['ID', 'LOOP', 'STATE', 'ATTEMPT', 'COST', 'STARTED'];
  const body = rows.map((r) =>
    [
      r.workflowId,
      r.loop ?? '-',
      r.state ?? r.status.toLowerCase(),
      String(r.attempt ?? '-'),
      r.costUsd === null ? '-' : money(r.costUsd),
      r.startTime.replace('T', ' ').slice(0, 19),
    ].map(escapeLine),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  return [header, ...body].map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** What a run trusts, in one line: whose signatures it checks, and how its autonomy was granted. */
function trustLine(t: TrustRecord): string {
  const a = t.allowedSigners;
  const signers = a
    ? `decisions verified against ${a.path} (sha256 ${a.sha256.slice(0, 12)}…, ${a.keys} key${a.keys === 1 ? '' : 's'})`
    : 'no allowed signers: decisions are unverified';
  const g = t.autonomy;
  const autonomy = !g.granted
    ? `not granted: ${g.reason}`
    : g.via === 'grant'
      ? `${g.level} granted by ${g.by} (key ${g.fingerprint})`
      : `${g.level} allowed by the loop's definition`;
  return `${signers}; ${autonomy}`;
}
