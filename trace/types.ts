import type { Budget, Autonomy } from '../common/loop-spec';
import type { CheckKind, Escalation, RunState, SandboxName, StopReason } from '../common/run-record';
import type { Usage } from '../common/usage';

/**
 * A run's story, rebuilt from its Temporal history alone (every run of its continue-as-new
 * chain): what started it, each attempt's model calls, tool calls and verdicts, the feedback
 * between attempts, escalations, human decisions, effects and how it ended. What
 * `loopwright trace <id> --json` prints. Strings that look like secrets are `[redacted]`.
 * Times are ISO 8601; `offsetMs` is milliseconds since the run started.
 */
export interface Trace {
  /** The shape's version; changes that break readers bump it. */
  version: 1;
  workflowId: string;
  /** How many Temporal runs (continue-as-new) the story spans; 1 for most runs. */
  runs: number;
  /** When the workflow started. */
  startedAt: string;
  /** The loop's name, spec version and autonomy level, pinned at start. */
  loop: string;
  specVersion: string;
  autonomy: Autonomy;
  /** The task given to the worker. */
  task: string;
  /** The budget pinned at start (before any human extension). */
  budget: Budget;
  /** sha256 of the rubric, pinned at start. */
  rubricHash: string;
  /** The loop's harness version the run used (`loopwright harness`); null for runs from before harness versions. */
  harnessVersion: number | null;
  /** True for a child run of an improvement's evaluation. */
  evaluation: boolean;
  /**
   * What ran the run's commands (the agent's and the checks'): `bwrap`, or `none` when the
   * worker opted out with LOOPWRIGHT_SANDBOX=off; null when the run ran no command (or predates the sandbox).
   */
  sandbox: SandboxName | null;
  /** How the run was started and by whom (a name, a schedule id), when known. */
  trigger: { kind: string; by: string | null };
  /** The key of the event or work item the run is about (event and discovery runs). */
  itemKey: string | null;
  /** The user's input to the loop, as given. */
  input: unknown;
  /** Every attempt, in order. */
  attempts: TraceAttempt[];
  /** Every time the run waited for a human (or an audit), in order. */
  escalations: TraceEscalation[];
  /** Every decision signal received, applied or refused, in order. */
  decisions: TraceDecision[];
  /** Every effect applied, attempted or found already applied, in order. */
  effects: TraceEffect[];
  /** How the run ended; null while it is still running. */
  outcome: TraceOutcome | null;
  /** Total usage: the run record's when it ended, else the sum of the calls seen so far. */
  usage: Usage;
}

/** A moment in the run. */
export interface TraceTime {
  /** When it happened (for calls: when the call was scheduled). */
  at: string;
  /** Milliseconds since the run started. */
  offsetMs: number;
}

/** One attempt: the worker's calls, its candidate, every check and the feedback it led to. */
export interface TraceAttempt extends TraceTime {
  /** The attempt number, from 1. */
  n: number;
  /** The worker's final answer; null when it stopped before answering. */
  candidate: string | null;
  /** True when every check passed; null when it never reached a verdict. */
  passed: boolean | null;
  /** Worker model calls (`generateCandidate`, or `modelTurn` for agent sessions), every try. */
  modelCalls: TraceModelCall[];
  /** Agent tool calls, allowed or denied, in the order the model made them. */
  toolCalls: TraceToolCall[];
  /** Each check's verdict (or the failure of the call that should have given it). */
  checks: TraceCheck[];
  /** Why the attempt stopped early (a budget, a model error), from the run record. */
  stopped: { reason: StopReason; detail: string } | null;
  /** What this failed attempt taught the next one; null when it passed or was the last. */
  feedback: TraceFeedback | null;
}

/** One try of a worker model call. */
export interface TraceModelCall extends TraceTime {
  /** The activity: `generateCandidate` (one-shot worker) or `modelTurn` (agent session). */
  activity: 'generateCandidate' | 'modelTurn';
  model: string;
  attempt: number;
  /** The agent turn (from 1); null for a one-shot worker call. */
  turn: number | null;
  /** Which try of this call it was (the workflow retries model calls), from 1. */
  try: number;
  /** How long the call took; null while it runs. */
  durationMs: number | null;
  /** Tokens and cost (also of a failed try, when the provider reported them); null when unknown. */
  usage: Usage | null;
  /** Input plus output tokens of `usage` (0 when unknown). */
  tokens: number;
  /** The failure message of a failed try; null when it succeeded or still runs. */
  error: string | null;
  /** Names of the tools the model called in this turn (agent sessions). */
  toolCalls: string[];
}

/** One tool call of an agent session. */
export interface TraceToolCall extends TraceTime {
  attempt: number;
  turn: number;
  name: string;
  /** The path, pattern or command (at most 80 characters). */
  summary: string;
  /** False when the autonomy gate denied it: no activity ran. */
  allowed: boolean;
  /** Why it was denied; null when allowed (or unknown while the run is going). */
  deniedReason: string | null;
  /** True when the tool reported an error (a denied call counts as one). */
  isError: boolean;
  /** The start of the tool's output; null when denied or not finished. */
  preview: string | null;
  /** Size of the full output; null when denied or not finished. */
  bytes: number | null;
  /** The activity's own failure (not a tool error), after its retries. */
  error: string | null;
  /** The sandbox that ran the call's command (run_command); null for other tools. */
  sandbox: SandboxName | null;
}

/** One check's verdict on an attempt's candidate. */
export interface TraceCheck extends TraceTime {
  attempt: number;
  /** The check's name, as the loop's spec calls it. */
  check: string;
  kind: CheckKind;
  /** The verdict; null when the check's call failed or has not finished. */
  passed: boolean | null;
  reason: string;
  failedItems: string[];
  requiredCorrection: string;
  /** What the check saw: a command's output tail, schema errors, a reviewer's note. */
  evidence: string | null;
  /** Who gave it, for a human review. */
  by: string | null;
  /** The judge's tokens and cost; null for checks that use no model. */
  usage: Usage | null;
  /** The failure of the check's activity; null when it gave a verdict. */
  error: string | null;
  /** The sandbox that ran the check's command (command and citations checks); null for others. */
  sandbox: SandboxName | null;
}

/** Feedback a failed attempt gave the next one. */
export interface TraceFeedback extends TraceTime {
  /** The attempt that received it. */
  toAttempt: number;
  /** The failing checks' reasons. */
  reasons: string[];
  /** The failing checks' required corrections (non-empty ones). */
  corrections: string[];
}

/** A wait for a human: a spent budget, a model error, a review, an approval or an audit. */
export interface TraceEscalation extends TraceTime {
  /** The run record's kind, or `audit`; null when the history alone cannot tell. */
  kind: Escalation['kind'] | 'audit' | null;
  /** Why it escalated, as the run said it. */
  reason: string;
  /** When the wait would end without a decision. */
  deadline: string | null;
  /** `decided` (a decision ended it), `timed_out` (the deadline passed) or `open` (still waiting). */
  outcome: 'decided' | 'timed_out' | 'open';
  /** When the wait ended; null while open. */
  endedAt: string | null;
}

/** One decision signal. */
export interface TraceDecision extends TraceTime {
  kind: string;
  id: string | null;
  /** Who decided (always recorded). */
  by: string;
  /** The note of an approve, extend or audit. */
  note: string | null;
  /** The reason of a reject. */
  reason: string | null;
  /** The guidance of a retry (it becomes feedback). */
  guidance: string | null;
  /** Attempts granted (retry, extend). */
  attempts: number | null;
  /** Extensions granted (extend). */
  tokens: number | null;
  costUsd: number | null;
  wallTime: string | null;
  /** An audit's verdict. */
  verdict: 'ok' | 'bad' | null;
  /** What the run did with it; null when the run has no record yet (still running). */
  status: 'applied' | 'refused' | null;
  /**
   * True: signed, and verified against the worker's allowed signers (`by` is the verified
   * principal, `fingerprint` its key); false: not signed, so `by` is only a claim (unverified);
   * null: not known from the history alone (a signed decision the record does not show).
   */
  verified: boolean | null;
  fingerprint: string | null;
  /** Why the run refused it. */
  refusal: string | null;
  /** True for the approve that accepted a candidate that had not passed its checks. */
  override: boolean;
}

/** One effect, keyed `<workflow id>/<effect name>/<sequence>`. */
export interface TraceEffect extends TraceTime {
  key: string;
  /** The effect's name in the spec. */
  name: string;
  kind: 'git_commit' | 'report';
  /** The branch a commit landed on, or a report's folder; null when unknown. */
  target: string | null;
  /** The commit; null for a report or a failed effect. */
  commit: string | null;
  /** The report's file. */
  path: string | null;
  /** True when the target already had it: nothing was done twice. */
  alreadyApplied: boolean;
  /** Why it could not be applied. */
  error: string | null;
}

/** How the run ended. */
export interface TraceOutcome extends TraceTime {
  /** The Temporal status of the last run in the chain. */
  status: 'completed' | 'failed' | 'canceled' | 'terminated' | 'timed_out';
  /** The run's terminal state and stop reason (from its record); null when it has none. */
  state: RunState | null;
  stopReason: StopReason | null;
  ok: boolean;
  /** True when a human accepted a candidate that did not pass. */
  override: boolean;
  /** The accepted candidate. */
  output: string | null;
  /** A fault, or why the workflow failed or was terminated. */
  error: string | null;
}
