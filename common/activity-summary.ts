/**
 * The summaries workflows give activities and timers (the Web UI's timeline labels them with
 * these), written and read here only: workflows build them with the functions below, and the
 * trace (trace/build-trace.ts) reads back what it needs from them with the parsers, also for
 * histories recorded by older versions. Changing a format: keep the parser reading the old one.
 * Pure and deterministic (workflow code calls it); callers apply redaction (`forDisplay`).
 */

const HUMAN_WAIT = 'wait for a human: ';
const AUDIT_WAIT = 'wait for an audit';
/** The longest summary of a human wait, in characters (after redaction). */
export const HUMAN_WAIT_MAX_CHARS = 200;

const retry = (tryNo: number) => (tryNo > 1 ? `, try ${tryNo}` : '');

/**
 * A model call: the role and the model id, then what the call is for, and the try when it is not
 * the first (`worker claude-sonnet-5-5: turn 3 (attempt 1), try 2`). Runs recorded before the
 * model port named the provider instead (`claude (worker): attempt 1`, `claude: turn 3 (attempt
 * 1)`, `check review (judge): attempt 1`, `claude (proposer)`); the trace reads model calls from
 * each activity's type and input, never from this summary, so it reads both alike.
 */
export function modelCallSummary(
  role: 'worker' | 'checker' | 'proposer',
  model: string,
  what: string,
  tryNo = 1,
): string {
  return `${role} ${model}: ${what}${retry(tryNo)}`;
}

/** The worker model's candidate for attempt `n`: `worker claude-…: attempt 2, try 2`. */
export const workerCallSummary = (model: string, n: number, tryNo: number) =>
  modelCallSummary('worker', model, `attempt ${n}`, tryNo);

/** One turn of an agent session: `worker claude-…: turn 3 (attempt 1)`. */
export const agentTurnSummary = (model: string, turn: number, n: number, tryNo: number) =>
  modelCallSummary('worker', model, `turn ${turn} (attempt ${n})`, tryNo);

/** A judge check of attempt `n`: `checker claude-…: check review (attempt 1)`. */
export const judgeCallSummary = (model: string, check: string, n: number, tryNo: number) =>
  modelCallSummary('checker', model, `check ${check} (attempt ${n})`, tryNo);

/** The improvement loop's proposer: `proposer claude-…: harness change for fix-test`. */
export const proposerCallSummary = (model: string, loop: string) =>
  modelCallSummary('proposer', model, `harness change for ${loop}`);

/** Any other check of attempt `n`: `check tests (tests): attempt 1`. */
export const checkSummary = (check: string, kind: string, n: number) => `check ${check} (${kind}): attempt ${n}`;

/** A tool call: `tool read_file src/math.js` (the name, then what the call is about, if anything). */
export const toolCallSummary = (name: string, about: string) => `tool ${name} ${about}`.trim();

/** What a tool call was about, read back from its summary (`''` when it names nothing more). */
export function parseToolCallSummary(summary: string, name: string): string {
  const prefix = `tool ${name}`;
  if (!summary.startsWith(prefix)) return summary;
  const rest = summary.slice(prefix.length);
  return rest.startsWith(' ') ? rest.slice(1) : rest;
}

/** The timer of a run waiting for a human decision (cut to {@link HUMAN_WAIT_MAX_CHARS} by the caller after redaction). */
export const humanWaitSummary = (reason: string) => `${HUMAN_WAIT}${reason}`;

/** The timer of a completed run waiting for its audit. */
export const auditWaitSummary = () => AUDIT_WAIT;

/** What a timer's summary says the run waited for: a human (with the reason, as far as the summary kept it), an audit, or neither. */
export function parseWaitSummary(summary: string): { kind: 'human'; reason: string } | { kind: 'audit' } | undefined {
  if (summary === AUDIT_WAIT) return { kind: 'audit' };
  if (summary.startsWith(HUMAN_WAIT)) return { kind: 'human', reason: summary.slice(HUMAN_WAIT.length) };
  return undefined;
}
