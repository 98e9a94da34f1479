import {
  fitLine,
  HISTORY_LIMIT_BYTES,
  HISTORY_LIMIT_EVENTS,
  turnsToReach,
  type HistoryMeasure,
  type TurnMeasure,
} from './measure-history';

/** One side of the comparison: a measured history and the new content of each tool turn. */
export interface BenchSide {
  name: string;
  measure: HistoryMeasure;
  newContent: number[];
}

/** The turns the table shows (those the session has). */
export const SHOWN_TURNS = [1, 2, 5, 10, 20, 30, 40, 49, 50];

const n = (x: number): string => Math.round(x).toLocaleString('en-US');
const kb = (x: number): string => `${(x / 1024).toFixed(1)} KB`;
const pad = (s: string, w: number): string => s.padStart(w);
const largest = (turns: TurnMeasure[]): TurnMeasure => turns.reduce((a, b) => (b.bytes > a.bytes ? b : a));
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
/**
 * The tool turns the growth is fitted on: from turn 2 (turn 1 carries the task instead of
 * tool results, so it differs in kind) to the last tool turn; all tool turns when too few.
 */
const steady = (side: BenchSide): TurnMeasure[] => {
  const tools = side.measure.turns.slice(0, -1);
  return tools.length >= 3 ? tools.slice(1) : tools;
};

/**
 * Turns to the 50 MB and the 51,200-event limits, from the growth of the tool turns. The tail
 * (the result lists every tool call) is counted as growing with each tool turn: an upper bound.
 */
function limits(side: BenchSide): { bytes: number; events: number } {
  const tools = steady(side);
  const line = fitLine(tools);
  const tailPerTurn = side.measure.tail.bytes / Math.max(1, side.measure.turns.length - 1);
  const bytes = turnsToReach(HISTORY_LIMIT_BYTES, side.measure.setup.bytes, {
    ...line,
    intercept: line.intercept + tailPerTurn,
  });
  const events = fitLine(tools.map((t) => ({ turn: t.turn, bytes: t.events, events: t.events })));
  return {
    bytes,
    events: turnsToReach(HISTORY_LIMIT_EVENTS, side.measure.setup.events + side.measure.tail.events, events),
  };
}

/**
 * The bench's printed report: a per-turn table (bytes and events of each side, and the new
 * content the turn added), totals, the largest turn, the naive/Loopwright ratios, a plain
 * conclusion, and how many turns each would take to reach Temporal's history limits.
 */
export function formatReport(lw: BenchSide, naive: BenchSide): string[] {
  const out: string[] = [];
  const turns = lw.measure.turns.length;
  const content = (t: number): string => {
    const a = lw.newContent[t - 1];
    if (a === undefined) return '— (answer)'; // t is past lw's tool turns
    const b = naive.newContent[t - 1];
    return a === b ? n(a) : `${n(a)} / ${b === undefined ? '—' : n(b)}`;
  };
  out.push(
    `${pad('turn', 5)} | ${pad(`${lw.name} bytes`, 16)} | ${pad('events', 6)} | ${pad(`${naive.name} bytes`, 12)} | ${pad('events', 6)} | ${pad('new content (bytes)', 19)}`,
  );
  out.push('-'.repeat(80));
  for (const t of SHOWN_TURNS.filter((x) => x <= turns)) {
    const a = lw.measure.turns[t - 1];
    const b = naive.measure.turns[t - 1];
    if (!a || !b) throw new Error(`turn ${t} is missing from the ${a ? naive.name : lw.name} measure`);
    out.push(
      `${pad(String(t), 5)} | ${pad(n(a.bytes), 16)} | ${pad(String(a.events), 6)} | ${pad(n(b.bytes), 12)} | ${pad(String(b.events), 6)} | ${pad(content(t), 19)}`,
    );
  }
  out.push('-'.repeat(80));
  for (const [label, key] of [
    ['before turn 1', 'setup'],
    [`after turn ${turns}`, 'tail'],
  ] as const) {
    out.push(
      `${pad(label, 13)} | ${pad(n(lw.measure[key].bytes), 8)} | ${pad(String(lw.measure[key].events), 6)} | ${pad(n(naive.measure[key].bytes), 12)} | ${pad(String(naive.measure[key].events), 6)} |`,
    );
  }
  out.push('');
  for (const side of [lw, naive]) {
    const big = largest(side.measure.turns);
    out.push(
      `${side.name}: history ${n(side.measure.bytes)} bytes (${kb(side.measure.bytes)}), ${n(side.measure.events)} events; largest turn: turn ${big.turn}, ${n(big.bytes)} bytes`,
    );
  }
  const last = (s: BenchSide) => s.measure.turns[turns - 1]?.bytes ?? NaN;
  out.push(
    `naive/${lw.name}: total bytes ×${(naive.measure.bytes / lw.measure.bytes).toFixed(1)}, turn ${turns} bytes ×${(last(naive) / last(lw)).toFixed(1)}`,
  );
  out.push(
    `new content over the session: ${n(sum(lw.newContent))} bytes in ${lw.newContent.length} tool turns (~${n(sum(lw.newContent) / Math.max(1, lw.newContent.length))} per turn)`,
  );
  out.push('');
  out.push(...conclusion(lw, naive));
  return out;
}

function conclusion(lw: BenchSide, naive: BenchSide): string[] {
  const turns = lw.measure.turns.length;
  const lwTools = lw.measure.turns.slice(0, -1);
  const lwFit = fitLine(steady(lw));
  const naiveFit = fitLine(steady(naive));
  const fitted = `turns ${steady(lw)[0]?.turn ?? '?'}–${turns - 1}`;
  const perTurn = sum(lwTools.map((t) => t.bytes)) / Math.max(1, lwTools.length);
  const lo = Math.min(...lwTools.map((t) => t.bytes));
  const hi = Math.max(...lwTools.map((t) => t.bytes));
  const content = sum(lw.newContent) / Math.max(1, lw.newContent.length);
  const lwEvents = sum(lwTools.map((t) => t.events)) / Math.max(1, lwTools.length);
  const lwLimits = limits(lw);
  const naiveLimits = limits(naive);
  const which = (l: { bytes: number; events: number }) =>
    l.bytes <= l.events ? `the 50 MB size limit` : `the ${n(HISTORY_LIMIT_EVENTS)}-event limit`;
  return [
    `Loopwright: history per tool turn stays at ~${n(perTurn)} bytes (${n(lo)}–${n(hi)}, slope ${lwFit.slope >= 0 ? '+' : ''}${lwFit.slope.toFixed(1)} B/turn over ${fitted}) ` +
      `whatever the turn; the ~${n(content)} bytes of new content per turn stay in the transcript store (history gets a ref and a 200-char preview).`,
    `naive: grows linearly by ~${n(naiveFit.slope)} bytes per turn over ${fitted} (the new content, re-sent every turn), to ${n(naive.measure.turns[turns - 1]?.bytes ?? NaN)} bytes at turn ${turns}; total history grows quadratically.`,
    `Loopwright's tail (checks and the run record, which lists every tool call with its preview) is ${n(lw.measure.tail.bytes)} bytes: it grows with the number of tool calls, once per run.`,
    `Turns to Temporal's 50 MB history limit at the observed growth (tail counted per tool turn): Loopwright ~${n(lwLimits.bytes)}, naive ~${n(naiveLimits.bytes)}.`,
    `Turns to the ${n(HISTORY_LIMIT_EVENTS)}-event limit (~${lwEvents.toFixed(1)} events per Loopwright turn): Loopwright ~${n(lwLimits.events)}, naive ~${n(naiveLimits.events)}; ` +
      `binding first: Loopwright ${which(lwLimits)}, naive ${which(naiveLimits)}.`,
  ];
}
