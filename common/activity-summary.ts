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

/** The worker model's candidate for attempt `n`: `claude (worker): attempt 2, try 2`. */
export const workerCallSummary = (n: number, tryNo: number) => `claude (worker): attempt ${n}${retry(tryNo)}`;

/** One turn of an agent session: `claude: turn 3 (attempt 1)`. */
export const agentTurnSummary = (turn: number, n: number, tryNo: number) => `claude: turn ${turn} (attempt ${n})${retry(tryNo)}`;

/** A judge check of attempt `n`: `check review (judge): attempt 1`. */
export const judgeCallSummary = (check: string, n: number, tryNo: number) => `check ${check} (judge): attempt ${n}${retry(tryNo)}`;

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
