import { byline } from '../common/decision';
import { UsageError } from '../common/errors';
import type { Autonomy } from '../common/loop-spec';
import { redactDeep, type Redaction } from '../common/redact';
import type {
  AttemptRecord,
  Escalation,
  RunRecord,
  RunState,
  SandboxName,
  StopReason,
  Verdict,
} from '../common/run-record';
import type { TestEvidence, TestOutcome } from '../common/test-results';
import type { Usage } from '../common/usage';
import { escapeBlock, escapeLine, terminalJson } from '../common/terminal';
import { money, oneLine } from '../trace/render-trace';
import { waitToken } from './wait-token';

/**
 * What a person needs to approve or review one attempt of a run: the run's state and why it
 * waits, what it used, every check's verdict and evidence, the test results by identity, the
 * judge's reasons, and the diff the approval would land. What `loopwright review <id> --json`
 * prints. Strings that look like secrets are `[redacted]`.
 */
export interface Review {
  /** The shape's version; changes that break readers bump it. */
  version: 1;
  workflowId: string;
  loop: string;
  specVersion: string;
  autonomy: Autonomy;
  state: RunState;
  stopReason: StopReason | null;
  /** True when a human accepted a candidate that did not pass its checks. */
  override: boolean;
  /**
   * Why the run waits for a human, until when, and the command that decides; null when it does
   * not wait. `wait` is the token of this wait (client/wait-token.ts) for `--wait`, so a decision
   * lands only on what was reviewed.
   */
  waiting: {
    kind: Escalation['kind'];
    reason: string;
    since: string;
    deadline: string;
    decide: string;
    wait?: string;
  } | null;
  /** Attempts made, of the budget's (extended) maximum. */
  attempts: { used: number; max: number };
  /** The run's total use. */
  usage: Usage;
  /** The limits the run's budget sets (null: no limit), with what is used. */
  budget: { tokens: { used: number; max: number } | null; costUsd: { used: number; max: number } | null };
  workspace: { root: string; branch: string | null } | null;
  sandbox: SandboxName | null;
  /** The last decision applied, with who made it. */
  decision: { kind: string; by: string; at: string; verified?: boolean; fingerprint?: string } | null;
  attempt: ReviewAttempt;
  /** Every verdict of the attempt, in the order the checks ran. */
  checks: ReviewCheck[];
  /** The verdicts that carry test results by identity (`tests` checks). */
  tests: Array<{ check: string; passed: boolean; tests: TestEvidence }>;
  /** The judge's verdicts (kind `judge`): its reasons and the rubric items it found failing. */
  judge: Array<{
    check: string;
    passed: boolean;
    reason: string;
    failedItems: string[];
    requiredCorrection: string;
    rubricHash: string | null;
  }>;
  diff: ReviewDiff;
}

/** The attempt under review. */
export interface ReviewAttempt {
  n: number;
  /** True when every automated check passed. */
  passed: boolean;
  /** True while it waits for a human check (its record is written once the review is given). */
  awaitingReview: boolean;
  reasons: string[];
  /** The agent's final answer: its own account, not evidence. */
  candidate: string | null;
  /** The commit of its changes on the run's branch (git workspaces). */
  commit: string | null;
  /** Its tokens and cost; null while it waits for a review. */
  usage: Usage | null;
  turns: number | null;
  toolCalls: number | null;
  stopped: { reason: StopReason; detail: string } | null;
}

/** One verdict of the attempt; the test results and the judge's reasons are in their own lists too. */
export type ReviewCheck = Pick<
  Verdict,
  'check' | 'kind' | 'passed' | 'reason' | 'failedItems' | 'requiredCorrection'
> & { evidence: string | null; by: string | null; sandbox: SandboxName | null };

/**
 * The change the approval would land, `git diff base head` of the run's branch: `ok` with the
 * `--stat` and the patch (`patch` empty and `truncated` when it is too large to print);
 * `none` when there is no change to show (no git workspace, nothing changed); `unavailable`
 * when this machine cannot read the repository; `skipped` for `--no-diff`.
 */
export type ReviewDiff =
  | { status: 'ok'; base: string; head: string; stat: string; patch: string; truncated: boolean }
  | { status: 'none' | 'unavailable' | 'skipped'; reason: string };

/** An attempt of the run's record, or the one waiting for a human review (whose usage the record does not hold yet). */
export type ReviewTarget = Omit<AttemptRecord, 'usage'> & { usage: Usage | null; awaitingReview: boolean };

/**
 * The attempt a reviewer decides on: `--attempt N` when given; else the one waiting for a human
 * review (`pendingReview`, not yet in `attempts`); else, while the run waits for a human, the
 * last attempt with a candidate (what `approve` accepts); else the last attempt. A run without
 * one is a UsageError that says what to do.
 */
export function reviewedAttempt(record: RunRecord, n?: number): ReviewTarget {
  const id = record.workflowId;
  const p = record.pendingReview;
  const pending: ReviewTarget | null = p && {
    n: p.attempt,
    candidate: p.candidate,
    passed: p.verdicts.every((v) => v.passed),
    reasons: [],
    verdicts: p.verdicts,
    usage: null,
    awaitingReview: true,
  };
  const all: ReviewTarget[] = [
    ...record.attempts.map((a) => ({ ...a, awaitingReview: false })),
    ...(pending && !record.attempts.some((a) => a.n === pending.n) ? [pending] : []),
  ];
  const [first] = all;
  const last = all.at(-1);
  if (first === undefined || last === undefined) {
    throw new UsageError(
      `run ${id} has no attempt to review (state ${record.state}${record.stopReason ? `, ${record.stopReason}` : ''}${record.error ? `: ${oneLine(record.error, 200)}` : ''}): see \`loopwright status ${id}\``,
    );
  }
  if (n !== undefined) {
    const a = all.find((x) => x.n === n);
    if (!a) throw new UsageError(`run ${id} has attempts ${first.n} to ${last.n}: --attempt ${n} is not one of them`);
    return a;
  }
  if (pending) return all.find((a) => a.n === pending.n)!;
  if (record.state === 'awaiting_human') return [...all].reverse().find((a) => a.candidate !== null) ?? last;
  return last;
}

/** Builds the review of `attempt` (from {@link reviewedAttempt}) with its diff; every string redacted. */
export function buildReview(
  record: RunRecord,
  attempt: ReviewTarget,
  diff: ReviewDiff,
  redaction: Redaction = {},
): Review {
  const b = record.budget;
  const e = record.state === 'awaiting_human' ? record.escalation : null;
  const verbs = e && (e.kind === 'review' || e.kind === 'approval' ? 'approve|reject' : 'approve|reject|retry|budget');
  const judges = attempt.verdicts.filter((v) => v.kind === 'judge');
  const token = e ? waitToken(record) : null;
  const review: Review = {
    version: 1,
    workflowId: record.workflowId,
    loop: record.loop,
    specVersion: record.specVersion,
    autonomy: record.autonomy,
    state: record.state,
    stopReason: record.stopReason,
    override: record.override,
    waiting: e && {
      kind: e.kind,
      reason: e.reason,
      since: e.since,
      deadline: e.deadline,
      decide: `loopwright ${verbs} ${record.workflowId} --by NAME${token ? ` --wait ${token}` : ''}`,
      ...(token ? { wait: token } : {}),
    },
    attempts: { used: record.attempts.length, max: b.maxAttempts },
    usage: record.usage.total,
    budget: {
      tokens: b.maxTokens === null ? null : { used: b.used.tokens, max: b.maxTokens },
      costUsd: b.maxCostUsd === null ? null : { used: b.used.costUsd, max: b.maxCostUsd },
    },
    workspace: record.workspace,
    sandbox: record.sandbox ?? null,
    decision: record.decision && {
      kind: record.decision.kind,
      by: record.decision.by,
      at: record.decision.at,
      verified: record.decision.verified === true,
      ...(record.decision.fingerprint ? { fingerprint: record.decision.fingerprint } : {}),
    },
    attempt: {
      n: attempt.n,
      passed: attempt.passed,
      awaitingReview: attempt.awaitingReview,
      reasons: attempt.reasons,
      candidate: attempt.candidate,
      commit: attempt.commit ?? null,
      usage: attempt.usage,
      turns: attempt.turns ?? null,
      toolCalls: attempt.toolCalls?.length ?? null,
      stopped: attempt.stopped ?? null,
    },
    checks: attempt.verdicts.map(checkOf),
    tests: attempt.verdicts.flatMap((v) => (v.tests ? [{ check: v.check, passed: v.passed, tests: v.tests }] : [])),
    judge: judges.map((v) => ({
      check: v.check,
      passed: v.passed,
      reason: v.reason,
      failedItems: v.failedItems,
      requiredCorrection: v.requiredCorrection,
      rubricHash: v.rubricHash ?? null,
    })),
    diff,
  };
  return redactDeep(review, redaction);
}

function checkOf(v: Verdict): ReviewCheck {
  return {
    check: v.check,
    kind: v.kind,
    passed: v.passed,
    reason: v.reason,
    failedItems: v.failedItems,
    requiredCorrection: v.requiredCorrection,
    evidence: v.evidence ?? null,
    by: v.by ?? null,
    sandbox: v.sandbox ?? null,
  };
}

/** The review as JSON that is safe to print on a terminal too: the same value, with C1, separator and bidi characters written as `\uXXXX`. */
export function reviewJson(review: Review): string {
  return terminalJson(review, 2);
}

type Style = 'bold' | 'red' | 'green' | 'cyan';
/** A line of the review; `block` marks a line of a multi-line text (candidate, evidence, diff), which keeps its tabs. */
type Line = { text: string; style?: Style; block?: boolean };
const SGR: Record<Style, string> = { bold: '1', red: '31', green: '32', cyan: '36' };

/** Evidence keeps its last lines: a command's summary and failure come at the end. */
export const EVIDENCE_LINES = 20;

/**
 * The review as text: a header (state, why it waits, attempts, tokens and cost, branch), the
 * candidate, each check, the test results, the judge's reasons and the diff. Every line is
 * escaped before any colour is added (`escapeLine`, so a field cannot start a line of its own;
 * the lines of a candidate, evidence or diff with `escapeBlock`, which keeps tabs); colour (`color: true`) marks
 * passes, failures and the diff (bold file headers, cyan hunks, red/green lines).
 */
export function renderReview(r: Review, opts: { color?: boolean } = {}): string[] {
  const lines: Line[] = [
    { text: r.workflowId, style: 'bold' },
    ...header(r),
    ...candidate(r),
    ...checks(r),
    ...tests(r),
    ...judge(r),
    ...diff(r),
  ];
  return lines.map(({ text, style, block }) => {
    const safe = block ? escapeBlock(text) : escapeLine(text);
    return opts.color && style && safe ? `\x1b[${SGR[style]}m${safe}\x1b[0m` : safe;
  });
}

const indent = (text: string, pad: string): Line[] =>
  text.split('\n').map((l) => ({ text: `${pad}${l}`.trimEnd(), block: true }));
const mark = (passed: boolean) => (passed ? 'pass' : 'FAIL');
const outcome = (passed: boolean): Style => (passed ? 'green' : 'red');

function header(r: Review): Line[] {
  const a = r.attempt;
  const out: Line[] = [
    { text: `  loop       ${r.loop} (v${r.specVersion}, ${r.autonomy})` },
    {
      text: `  state      ${r.state}${r.stopReason ? ` (${r.stopReason})` : ''}${r.override ? ' — human override' : ''}`,
    },
  ];
  if (r.waiting)
    out.push(
      { text: `  waiting    ${r.waiting.kind} until ${r.waiting.deadline}: ${oneLine(r.waiting.reason)}` },
      { text: `             decide with: ${r.waiting.decide}` },
    );
  const status = a.awaitingReview
    ? 'passed its automated checks, waits for review'
    : a.stopped
      ? `stopped (${a.stopped.reason})`
      : a.passed
        ? 'passed'
        : 'failed';
  out.push({
    text: `  attempts   ${r.attempts.used}/${r.attempts.max}; this is attempt ${a.n}: ${status}${a.turns !== null ? `, ${a.turns} turns, ${a.toolCalls ?? 0} tool calls` : ''}`,
  });
  const u = r.usage;
  const limits = [
    r.budget.tokens && `tokens ${r.budget.tokens.used}/${r.budget.tokens.max}`,
    r.budget.costUsd && `cost ${money(r.budget.costUsd.used)}/${money(r.budget.costUsd.max)}`,
  ].filter(Boolean);
  out.push({
    text: `  usage      ${u.inputTokens + u.outputTokens} tokens (${u.inputTokens} in / ${u.outputTokens} out), ${money(u.costUsd)}${a.usage ? `; attempt ${a.n}: ${a.usage.inputTokens + a.usage.outputTokens} tokens, ${money(a.usage.costUsd)}` : ''}`,
  });
  if (limits.length) out.push({ text: `  budget     ${limits.join(' · ')}` });
  if (r.workspace?.branch)
    out.push({
      text: `  branch     ${r.workspace.branch}${a.commit ? ` (attempt ${a.n}: ${a.commit.slice(0, 12)})` : ''}`,
    });
  if (r.sandbox)
    out.push({
      text: `  sandbox    ${r.sandbox === 'none' ? 'none (LOOPWRIGHT_SANDBOX=off: commands ran unsandboxed)' : r.sandbox}`,
    });
  if (r.decision)
    out.push({ text: `  decision   ${r.decision.kind} by ${r.decision.by}${byline(r.decision)} at ${r.decision.at}` });
  if (a.stopped) out.push({ text: `  stopped    ${oneLine(a.stopped.detail)}` });
  return out;
}

function candidate(r: Review): Line[] {
  const c = r.attempt.candidate;
  const title = r.workspace?.branch
    ? "candidate (the agent's own account: a claim, not evidence; the diff is below)"
    : 'candidate';
  return [
    { text: '' },
    { text: title, style: 'bold' },
    ...(c === null
      ? [{ text: '  (none: the attempt stopped before the agent answered)' }]
      : indent(c.trim() || '(empty)', '  ')),
  ];
}

function checks(r: Review): Line[] {
  const out: Line[] = [{ text: '' }, { text: `checks of attempt ${r.attempt.n}`, style: 'bold' }];
  if (r.checks.length === 0) out.push({ text: '  (no verdicts)' });
  for (const c of r.checks) {
    const who = [c.by && `by ${c.by}`, c.sandbox && `sandbox ${c.sandbox}`].filter(Boolean).join(', ');
    out.push({
      text: `  ${mark(c.passed)}  ${c.check} (${c.kind})${who ? ` [${who}]` : ''}${c.kind === 'judge' ? ': see the judge below' : c.reason ? `: ${oneLine(c.reason, 1000)}` : ''}`,
      style: outcome(c.passed),
    });
    if (c.kind === 'judge') continue;
    if (c.failedItems.length) out.push({ text: `        failed: ${c.failedItems.join(', ')}` });
    if (c.requiredCorrection) out.push({ text: `        correction: ${oneLine(c.requiredCorrection, 1000)}` });
    if (c.evidence?.trim()) {
      const ev = c.evidence.trimEnd().split('\n');
      out.push(
        {
          text: `        evidence${ev.length > EVIDENCE_LINES ? ` (last ${EVIDENCE_LINES} of ${ev.length} lines)` : ''}:`,
        },
        ...indent(ev.slice(-EVIDENCE_LINES).join('\n'), '          | '),
      );
    }
  }
  return out;
}

const arrow = (from: TestOutcome, to: TestOutcome) => `${from} → ${to}`;

function tests(r: Review): Line[] {
  return r.tests.flatMap(({ check, tests: t }) => {
    const f2pOk = t.failToPass.filter((x) => x.candidate === 'passed').length;
    const out: Line[] = [{ text: '' }, { text: `tests (${check}, ${t.runner})`, style: 'bold' }];
    out.push({ text: `  fail-to-pass   ${f2pOk}/${t.failToPass.length} pass on the candidate (base → candidate)` });
    for (const x of t.failToPass)
      out.push({
        text: `    ${mark(x.candidate === 'passed')}  ${x.test}: ${arrow(x.base, x.candidate)}`,
        style: outcome(x.candidate === 'passed'),
      });
    out.push({
      text: `  pass-to-pass   ${t.passToPass.passing}/${t.passToPass.total} still pass`,
      style: t.passToPass.broken.length ? 'red' : undefined,
    });
    for (const x of t.passToPass.broken) out.push({ text: `    FAIL  ${x.test}: passed → ${x.outcome}`, style: 'red' });
    out.push({
      text: `  added          ${t.added.length} test${t.added.length === 1 ? '' : 's'} by the candidate (candidate, base)`,
    });
    for (const x of t.added)
      out.push({
        text: `    ${x.test}: ${x.candidate} on the candidate, ${x.base} on base${x.candidate === 'passed' && x.base !== 'passed' ? ' (a regression test)' : ''}`,
      });
    if (t.heldOut) {
      out.push({
        text: `  held out       ${t.heldOut.passing}/${t.heldOut.total} pass`,
        style: t.heldOut.failing.length ? 'red' : undefined,
      });
      for (const name of t.heldOut.failing) out.push({ text: `    FAIL  ${name}`, style: 'red' });
    }
    return out;
  });
}

function judge(r: Review): Line[] {
  if (r.judge.length === 0) return [];
  return [
    { text: '' },
    { text: "the judge's reasons", style: 'bold' },
    ...r.judge.flatMap((j) => [
      { text: `  ${mark(j.passed)}  ${j.check}: ${oneLine(j.reason, 2000)}`, style: outcome(j.passed) },
      ...(j.failedItems.length ? [{ text: `        failed rubric items: ${j.failedItems.join('; ')}` }] : []),
      ...(j.requiredCorrection ? [{ text: `        correction: ${oneLine(j.requiredCorrection, 1000)}` }] : []),
    ]),
  ];
}

function diff(r: Review): Line[] {
  const d = r.diff;
  if (d.status !== 'ok') return [{ text: '' }, { text: `diff: ${d.reason}` }];
  const out: Line[] = [
    { text: '' },
    { text: `diff ${d.base.slice(0, 12)}..${d.head.slice(0, 12)} (what the approval lands)`, style: 'bold' },
    ...indent(d.stat.trimEnd(), ''),
  ];
  if (d.truncated) return [...out, { text: `the patch is too large to print: git diff ${d.base} ${d.head}` }];
  out.push({ text: '' });
  // A file's header runs from `diff --git` to its first hunk; inside hunks, `--- x` is a removed line.
  let inHunk = false;
  for (const text of d.patch.trimEnd().split('\n')) {
    if (text.startsWith('diff --git ')) inHunk = false;
    else if (text.startsWith('@@')) inHunk = true;
    const style: Style | undefined = !inHunk
      ? 'bold'
      : text.startsWith('@@')
        ? 'cyan'
        : text.startsWith('+')
          ? 'green'
          : text.startsWith('-')
            ? 'red'
            : undefined;
    out.push({ text, style, block: true });
  }
  return out;
}
